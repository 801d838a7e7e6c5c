import { formatMode, ParameterReader } from './task-parameters';

describe('ParameterReader.mode', () => {
  it.each<[unknown, number]>([
    ['0644', 0o644],
    ['644', 0o644],
    ['0755', 0o755],
    ['4755', 0o4755],
    [644, 0o644], // YAML 1.2 reads an unquoted 0644 as 644
    [600, 0o600],
    [undefined, 0o640],
  ])('%p -> %o', (value, expected) => {
    const p = new ParameterReader('upload_file', { permissions: value });
    expect(p.mode('permissions', 0o640)).toBe(expected);
    expect(p.problems).toEqual([]);
  });

  it.each<[unknown]>([['rw-r--r--'], ['0968'], [648], [-1], [6.5], [true]])('refuses %p', (value) => {
    const p = new ParameterReader('upload_file', { permissions: value });
    p.mode('permissions', 0o644);
    expect(p.problems).toEqual([`parameters.permissions: expected a mode like '0644', got ${JSON.stringify(value)}`]);
  });
});

describe('formatMode', () => {
  it('renders a mode as 4 octal digits', () => {
    expect([formatMode(0o644), formatMode(0o4755), formatMode(0o7)]).toEqual(['0644', '04755', '0007']);
  });
});
