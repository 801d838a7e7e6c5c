// One validation path (issue 24): every invalid plugin fixture of the validator, fed through
// every way a plugin enters Granule — `plugin validate`, `plan --plugin`, `deploy --plugin`,
// `plugin install` over NATS and POST /plugins over HTTP — is refused with the same findings.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { formatDiagnostic, type Diagnostic } from '@granule/core';
import { readPluginSourceFiles } from '@granule/config-store-client';
import { E2eStack, REPO_ROOT, waitUntil } from './stack';

const FIXTURES = path.join(REPO_ROOT, 'libs/domain/plugin/src/__fixtures__');

interface Fixture {
  extends?: string;
  remove?: string[];
  files?: Record<string, string>;
  expect?: { valid: boolean; diagnostics: string[] };
}

const readFixture = (name: string): Fixture =>
  parse(readFileSync(path.join(FIXTURES, `${name}.yaml`), 'utf8')) as Fixture;

/** A fixture's files with its base's underneath (as the validator's own fixture test reads them). */
function fixtureFiles(name: string): Record<string, string> {
  const f = readFixture(name);
  const base = f.extends ? fixtureFiles(f.extends) : {};
  for (const r of f.remove ?? []) delete base[r];
  return { ...base, ...(f.files ?? {}) };
}

const INVALID = readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => f.replace(/\.yaml$/, ''))
  .filter((name) => readFixture(name).expect?.valid === false)
  .sort();

/** The report lines every entry point prints: errors, then warnings. */
const reportLines = (text: string): string[] => text.split('\n').filter((l) => /^(error|warning): /.test(l));
const rendered = (diagnostics: Diagnostic[]): string[] =>
  (['error', 'warning'] as const).flatMap((s) =>
    diagnostics.filter((d) => d.severity === s).map((d) => `${s}: ${formatDiagnostic(d)}`),
  );

// Each case runs four CLI processes and an HTTP request: seconds each on a busy machine.
jest.setTimeout(60_000);

describe('one validation path - every invalid fixture, every entry point', () => {
  const token = `e2e-${randomBytes(12).toString('hex')}`;
  const port = 20000 + Math.floor(Math.random() * 20000);
  let stack: E2eStack;
  let dir: string;
  let tasks: string;
  let nodes: string;

  beforeAll(async () => {
    stack = await E2eStack.start({
      name: 'plugin_paths',
      agents: [],
      configStoreEnv: { GRANULE_API_TOKEN: token, GRANULE_HTTP_PORT: String(port) },
    });
    await stack.service('config-store').start();
    await waitUntil(
      () =>
        fetch(`http://127.0.0.1:${port}/releases`, { headers: { authorization: `Bearer ${token}` } }).then(
          (r) => r.ok,
          () => false,
        ),
      'the config-store HTTP API',
      20_000,
    );
    dir = mkdtempSync(path.join(os.tmpdir(), 'granule-plugin-paths-'));
    tasks = path.join(dir, 'tasks.yaml');
    writeFileSync(
      tasks,
      '- id: base-task\n  type: shell\n  version: 2.0.0\n  roles: ["*"]\n  parameters: {cmd: "true"}\n',
    );
    nodes = path.join(dir, 'nodes.yaml');
    writeFileSync(nodes, 'nodes:\n  - {uid: "1", roles: [controller]}\n');
    for (const name of INVALID) {
      for (const [rel, content] of Object.entries(fixtureFiles(name))) {
        const target = path.join(dir, name, rel);
        if (rel.endsWith('/')) mkdirSync(target, { recursive: true });
        else {
          mkdirSync(path.dirname(target), { recursive: true });
          writeFileSync(target, content);
        }
      }
    }
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('there are invalid fixtures to feed', () => {
    expect(INVALID.length).toBeGreaterThanOrEqual(20);
  });

  it.each(INVALID)('%s - refused with the same report by validate, plan, deploy, install and HTTP', async (name) => {
    const plugin = path.join(dir, name);
    const [validate, plan, deploy, install] = await Promise.all([
      stack.granule(['plugin', 'validate', plugin]),
      stack.granule(['plan', '--tasks', tasks, '--nodes', nodes, '--plugin', plugin]),
      stack.granule(['deploy', '--tasks', tasks, '--nodes', nodes, '--plugin', plugin, '--run-id', `never-${name}`]),
      stack.granule(['plugin', 'install', plugin]),
    ]);

    // The validator's report: what the fixture says must be found, each finding naming the plugin's file.
    expect(validate.code).toBe(1);
    const report = reportLines(validate.stdout);
    for (const want of readFixture(name).expect?.diagnostics ?? []) {
      const [severity, , ...rest] = want.split(' ');
      if (severity !== 'info') expect(report).toContain(`${severity}: ${plugin}/${rest.join(' ')}`);
    }
    expect(validate.stdout.trimEnd().split('\n').pop()).toMatch(new RegExp(`^${plugin}: invalid \\(`));

    // Every other entry point prints exactly those lines, and nothing else.
    for (const [what, run] of [
      ['plan', plan],
      ['deploy', deploy],
      ['plugin install', install],
    ] as const) {
      expect({ what, code: run.code, stderr: run.stderr.split('\n').filter(Boolean) }).toEqual({
        what,
        code: 1,
        stderr: report,
      });
    }

    const http = await fetch(`http://127.0.0.1:${port}/plugins`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(await readPluginSourceFiles(plugin)),
    });
    const body = (await http.json()) as { error: { code: string; message: string; diagnostics: Diagnostic[] } };
    expect(http.status).toBe(400);
    expect(rendered(body.error.diagnostics)).toEqual(report);
    expect(body.error.message).toBe(
      report
        .filter((l) => l.startsWith('error: '))
        .map((l) => l.slice('error: '.length))
        .join('\n'),
    );
  });

  it('nothing was installed and no run was started', async () => {
    const plugins = await stack.granule(['plugin', 'list', '-o', 'json']);
    expect([plugins.code, JSON.parse(plugins.stdout)]).toEqual([0, []]);
    const runs: Array<{ n: number }> = await stack.dataSource.query(
      `SELECT count(*)::int AS n FROM granule_events WHERE stream_id LIKE 'run-never-%'`,
    );
    expect(runs[0].n).toBe(0);
  });
});
