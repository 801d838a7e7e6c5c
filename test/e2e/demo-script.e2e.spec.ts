import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, assertBuilt } from './stack';

// tools/demo.sh (the quick start) in pieces, without its minute of setting up and deploying:
// each demo agent gets a health port of its own, and the closing hints work as printed — the
// offline one runs, the others parse (they need the services, which stay up only with
// DEMO_KEEP=1, as the hint without it says). The pieces are in tools/demo-lib.sh, which the demo
// sources.
const RELEASE = 'examples/releases/example-release';

function bash(script: string, env: Record<string, string> = {}): string {
  const r = spawnSync('bash', ['-euo', 'pipefail', '-c', `source tools/demo-lib.sh\n${script}`], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
  });
  if (r.status !== 0) throw new Error(`bash exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

/** The demo's closing hints, as it prints them at its end. */
function hints(keep: boolean): string {
  return bash('demo_hints', {
    RELEASE,
    DEMO_DIR: '/tmp/granule-demo',
    db: 'granule_demo',
    ...(keep
      ? {
          DEMO_KEEP: '1',
          GRANULE_NATS_URL: 'nats://127.0.0.1:4322',
          GRANULE_SUBJECT_PREFIX: 'demo',
          GRANULE_NATS_CREDS: '/tmp/granule-demo/auth/creds/demo-operator.creds',
        }
      : {}),
  });
}

/** The `./granule ...` commands among the hints, without their comments, as words. */
function granuleCommands(text: string): string[][] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('./granule '))
    .map((l) =>
      l
        .replace(/\s+#.*$/, '')
        .split(/\s+/)
        .slice(1),
    );
}

/** Runs a hinted command with the built CLI, where no NATS answers (a refused connection is not a usage error). */
function granule(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [path.join(REPO_ROOT, 'dist/apps/cli/src/main.js'), ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    env: { ...process.env, GRANULE_NATS_URL: 'nats://127.0.0.1:1', GRANULE_NATS_CREDS: '' },
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('tools/demo.sh - health ports and closing hints', () => {
  beforeAll(() => assertBuilt());

  it('each of the four agents gets a health port of its own, none the default 8414', () => {
    const ports = bash('for uid in 1 2 3 4; do demo_health_port "$uid"; done').trim().split('\n');
    expect(ports).toEqual(['8421', '8422', '8423', '8424']);
    expect(bash('demo_health_port 3', { AGENT_HEALTH_BASE: '9000' }).trim()).toBe('9003');
    // The demo starts its agents with that port.
    const demo = readFileSync(path.join(REPO_ROOT, 'tools/demo.sh'), 'utf8');
    expect(demo).toMatch(/^source tools\/demo-lib\.sh$/m);
    expect(demo).toMatch(/for uid in 1 2 3 4; do\n(.*\n)*?.*GRANULE_HEALTH_PORT="\$\(demo_health_port "\$uid"\)"/);
    expect(demo).not.toMatch(/GRANULE_HEALTH_PORT=(?!"\$\(demo_health_port)/);
  });

  it('without DEMO_KEEP: says the services stop and how to keep them; the one command it offers runs offline', () => {
    const text = hints(false);
    expect(text).toContain('The services stop as the demo ends.');
    expect(text).toContain('DEMO_KEEP=1 bash tools/demo.sh');
    const commands = granuleCommands(text);
    expect(commands).toEqual([
      ['plan', '--release', RELEASE, '--nodes', `${RELEASE}/nodes.yaml`, '--simulate', '-o', 'table'],
    ]);
    const r = granule(commands[0]);
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(r.stdout).toMatch(/^makespan: \d+/m);
  });

  it("with DEMO_KEEP=1: the connection to paste first, every command parses, the health URL is agent 1's port", () => {
    const text = hints(true);
    expect(text).toContain('the services keep running');
    expect(text).toContain(
      'export GRANULE_NATS_URL=nats://127.0.0.1:4322 GRANULE_SUBJECT_PREFIX=demo GRANULE_NATS_CREDS=/tmp/granule-demo/auth/creds/demo-operator.creds',
    );
    expect(text).toContain('curl -s http://127.0.0.1:8421/readyz');
    const commands = granuleCommands(text);
    expect(commands.map((c) => c.slice(0, 2).join(' '))).toEqual([
      'runs list',
      'runs events',
      'runs show',
      'audit list',
      'graph --run',
      'graph --env',
      'plan --release',
    ]);
    for (const args of commands) {
      const r = granule(args);
      // Offline: it runs; otherwise it got past its flags and arguments to the connection.
      const expected =
        args[0] === 'plan'
          ? { code: 0, error: '' }
          : { code: 1, error: expect.stringMatching(/^error: cannot reach NATS/) };
      expect({ args, code: r.code, error: r.stderr.split('\n')[0] }).toEqual({ args, ...expected });
    }
  }, 60_000);
});
