import { readFileSync } from 'node:fs';
import path from 'node:path';
import { GRANULE_VERSION } from './version';

describe('GRANULE_VERSION', () => {
  it('is the version in package.json', () => {
    const pkg = JSON.parse(readFileSync(path.resolve(__dirname, '../../../../package.json'), 'utf8')) as {
      version: string;
    };
    expect(GRANULE_VERSION).toBe(pkg.version);
  });
});
