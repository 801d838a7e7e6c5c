import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { INPUT_LIMITS } from '@granule/core';
import { BAD_INPUT_CASES } from './bad-input.cases';
import { LIMIT_NOTES, renderBadInputDoc } from './bad-input-doc';

const DOC = path.resolve(__dirname, '../../docs/bad-input.md');

describe('docs/bad-input.md', () => {
  // `npm run docs:bad-input` sets GRANULE_WRITE_BAD_INPUT_DOC=1 to write the file instead.
  if (process.env.GRANULE_WRITE_BAD_INPUT_DOC === '1') {
    it('is written from the table', () => {
      writeFileSync(DOC, renderBadInputDoc());
      expect(readFileSync(DOC, 'utf8')).toBe(renderBadInputDoc());
    });
    return;
  }

  it('is what the table, the identifier rules and the bounds say (run npm run docs:bad-input when this fails)', () => {
    expect(readFileSync(DOC, 'utf8')).toBe(renderBadInputDoc());
  });

  it('describes every bound and lists every case once', () => {
    expect(Object.keys(LIMIT_NOTES).sort()).toEqual(Object.keys(INPUT_LIMITS).sort());
    const keys = BAD_INPUT_CASES.map((c) => `${c.input} @ ${c.where}`);
    expect(new Set(keys).size).toBe(keys.length);
  });
});
