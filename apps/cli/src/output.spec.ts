import { parseFormat } from './output';

describe('parseFormat', () => {
  it('takes table for text and text for table, whichever name the command uses', () => {
    expect(parseFormat('table', ['text', 'json', 'yaml'] as const)).toBe('text');
    expect(parseFormat('text', ['json', 'yaml', 'table'] as const)).toBe('table');
    expect(parseFormat('text', ['text', 'json'] as const)).toBe('text');
  });

  it('refuses any other format naming the ones there are', () => {
    expect(() => parseFormat('xml', ['json', 'yaml', 'table'] as const)).toThrow(
      '-o xml: expected one of json, yaml, table',
    );
    expect(() => parseFormat('table', ['json', 'yaml'] as const)).toThrow('-o table: expected one of json, yaml');
  });
});
