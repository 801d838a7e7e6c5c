import { readdirSync } from 'node:fs';
import path from 'node:path';
import { InvalidInputError, formatDiagnostic } from '@granule/core';
import { fixtureFiles, readFixture } from './__fixtures__/fixture-files';
import { assertValidPlugin, validatePlugin } from './plugin-validator';

type Finding = Parameters<typeof formatDiagnostic>[0];
// Fixture expectations name files inside the plugin; the report puts them under the source (the fixture's name).
const render =
  (source: string) =>
  (d: Finding): string =>
    `${d.severity} ${d.code} ${formatDiagnostic({ ...d, file: d.file?.replace(new RegExp(`^${source}/`), '') })}`;
const failing = readdirSync(path.join(__dirname, '__fixtures__'))
  .filter((f) => f.endsWith('.yaml') && !f.startsWith('base-'))
  .map((f) => f.replace(/\.yaml$/, ''))
  .filter((name) => (readFixture(name).expect?.diagnostics.length ?? 0) > 0);

describe('validatePlugin - one fixture per rule', () => {
  it.each(['base-v5', 'base-v4', 'base-release'])('%s - is valid with no errors or warnings', async (name) => {
    const report = await validatePlugin(fixtureFiles(name));
    expect(report.diagnostics.filter((d) => d.severity !== 'info').map(render(name))).toEqual([]);
    expect(report.valid).toBe(true);
  });

  it.each(failing)('%s - reports the rule', async (name) => {
    const fixture = readFixture(name);
    const report = await validatePlugin(fixtureFiles(name));
    const got = report.diagnostics.map(render(name));
    for (const want of fixture.expect?.diagnostics ?? []) expect(got).toContain(want);
    expect(report.valid).toBe(fixture.expect?.valid);
  });
});

describe('validatePlugin - the report', () => {
  it('names every file under the source the plugin was read from', async () => {
    const report = await validatePlugin(fixtureFiles('metadata-schema'));
    expect(report.diagnostics.length).toBeGreaterThan(0);
    for (const d of report.diagnostics) expect(d.file).toMatch(/^metadata-schema\/[^/]/);
  });

  it('lists findings by file, then line', async () => {
    const report = await validatePlugin(fixtureFiles('v5-deprecated-keys'));
    const keys = report.diagnostics.map((d) => [d.file ?? '', d.line ?? 0] as const);
    const sorted = [...keys].sort((a, b) => a[0].localeCompare(b[0]) || a[1] - b[1]);
    expect(new Set(keys.map((k) => k[0])).size).toBeGreaterThan(1);
    expect(keys).toEqual(sorted);
  });

  it('assertValidPlugin - throws the whole report for an invalid plugin, returns it for a valid one', async () => {
    const err = await assertValidPlugin(fixtureFiles('metadata-missing-keys')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidInputError);
    const report = await validatePlugin(fixtureFiles('metadata-missing-keys'));
    expect((err as InvalidInputError).diagnostics).toEqual(report.diagnostics);
    await expect(assertValidPlugin(fixtureFiles('base-v5'))).resolves.toMatchObject({ valid: true });
  });
});

describe('validatePlugin - messages that need more than a fixture line', () => {
  it.each([
    ['stage-typo-double-colon', 'post_deployment:: 50'],
    ['stage-typo-colon-space', 'post_deployment: :50'],
  ])("%s - the YAML error shows 'post_deployment/50'", async (name, typo) => {
    const report = await validatePlugin(fixtureFiles(name));
    const syntax = report.diagnostics.filter((d) => d.code === 'PLUGIN_YAML_SYNTAX');
    expect(syntax).toHaveLength(1);
    expect(syntax[0]).toMatchObject({ severity: 'error', file: `${name}/tasks.yaml`, line: 2 });
    expect(syntax[0].message).toMatch(
      /^YAML syntax error: .+; stage '.+' is not valid: write it as 'post_deployment\/50'$/,
    );
    expect(syntax[0].message).toContain(typo.split(' ')[0]);
    expect(report.valid).toBe(false);
  });

  it('bad-role-regex - names the regex error', async () => {
    const report = await validatePlugin(fixtureFiles('bad-role-regex'));
    const bad = report.diagnostics.filter((d) => d.code === 'TASK_BAD_ROLE_PATTERN');
    expect(bad).toHaveLength(1);
    expect(bad[0]).toMatchObject({ file: 'bad-role-regex/deployment_tasks.yaml', line: 4, path: '[0].roles[0]' });
    expect(bad[0].message).toContain('/contr(oller/');
    expect(bad[0].message).toMatch(/Unterminated group/);
  });

  it('reports every problem of a file, not only the first', async () => {
    const report = await validatePlugin(fixtureFiles('metadata-schema'));
    expect(report.diagnostics.filter((d) => d.severity === 'error').length).toBeGreaterThanOrEqual(5);
  });
});
