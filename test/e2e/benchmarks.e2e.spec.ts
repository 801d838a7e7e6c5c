import { spawn } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT, assertBuilt } from './stack';

// The benchmarks are scripts nobody runs in CI at full size; a small run here keeps them working
// (the hollow nodes speak the agent's wire protocol, which a contract change could break).

function runBench(
  args: string[],
  env: Record<string, string>,
  script = 'test/bench/orchestrator.bench.mjs',
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(REPO_ROOT, script), ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The number printed right after `label` on the line that starts with it. */
function figure(stdout: string, label: string): number {
  const line = stdout.split('\n').find((l) => l.startsWith(label));
  if (!line) throw new Error(`no line starting with '${label}' in:\n${stdout}`);
  return Number(line.slice(label.length).trim().split(/\s+/)[0]);
}

describe('npm run bench:orchestrator (small)', () => {
  beforeAll(() => assertBuilt());

  it('runs 2 agents x 3 tasks end to end, then the same run on hollow nodes, and prints the figures of both', async () => {
    const r = await runBench(['--agents', '2', '--tasks', '3'], { BENCH_WARMUP: '0', BENCH_TIMEOUT_S: '120' });
    expect({ code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(r.stdout).toContain('orchestrator benchmark: 2 agents x 3 chained no-op shell tasks = 6 task runs');
    expect(r.stdout).toContain('control plane alone: the same 6 task runs, the agents replaced by 2 hollow nodes');
    const [agentsWall, hollowWall] = r.stdout
      .split('\n')
      .filter((l) => l.startsWith('run wall time (first to last event):'))
      .map((l) => Number(l.split(':')[1].trim().split(/\s+/)[0]));
    expect([agentsWall > 0, hollowWall > 0]).toEqual([true, true]);
    // The bench exits non-zero unless both runs ended DeploymentSucceeded with every task run.
    expect(figure(r.stdout, 'task runs per second:')).toBeGreaterThan(0);
    expect(r.stdout).toMatch(
      /CPU per task run \(ms\):\s+orchestrator [\d.]+ {3}postgres [\d.]+ {3}nats [\d.]+ {3}planner [\d.]+ {3}hollow nodes [\d.]+/,
    );
  }, 180_000);
});

describe('npm run bench:plan-load (small)', () => {
  beforeAll(() => assertBuilt());

  it('plans 50 nodes, loads the stored plan streamed and the old way, the same instances both ways', async () => {
    const r = await runBench([], { BENCH_SIZES: '50', BENCH_LEGACY: '1' }, 'test/bench/plan-load.bench.mjs');
    expect({ code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(r.stdout).toMatch(/^50 nodes x 330 tasks: planned in [\d.]+ s, \d+ MiB of JSON, [\d.]+ MiB gzip/m);
    const loaded = [
      ...r.stdout.matchAll(/^ {2}(stream|legacy): (\d+) instances loaded in [\d.]+ s; peak heap \d+ MiB/gm),
    ];
    expect(loaded.map((m) => m[1])).toEqual(['stream', 'legacy']);
    expect(Number(loaded[0][2])).toBeGreaterThan(50 * 250);
    expect(loaded[1][2]).toBe(loaded[0][2]);
  }, 120_000);
});

describe('npm run bench:watch-cost (small)', () => {
  beforeAll(() => assertBuilt());

  it('deploys 3 hollow nodes x 2 tasks with and without --watch; the watch asks one query, the recap', async () => {
    const r = await runBench(['--nodes', '3', '--tasks', '2'], {}, 'test/bench/watch-cost.bench.mjs');
    expect({ code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(r.stdout).toContain('watch cost: 3 hollow nodes x 2 chained no-op tasks = 6 task runs');
    // Following the EVENTS stream: the unwatched deploy waits for its plan without a query, the
    // watch asks for the recap only (a polling watch asks runs.events every 300 ms).
    expect(r.stdout).toMatch(/^deploy \(no watch\) +[\d.]+ s {3}CLI NATS messages \d+ {3}queries 0 \(none\)/m);
    expect(r.stdout).toMatch(/^deploy --watch +[\d.]+ s {3}CLI NATS messages \d+ {3}queries 1 \(runs\.show 1\)/m);
    expect(figure(r.stdout, "the watch's share  CLI NATS messages")).toBeGreaterThan(0);
  }, 180_000);
});

describe('npm run bench:ready-order (small)', () => {
  beforeAll(() => assertBuilt());

  it('simulates both ready-task rules on fuel-library and a small synthetic release and prints each makespan', async () => {
    const r = await runBench([], { BENCH_SIZES: '20', BENCH_SEEDS: '1' }, 'test/bench/ready-order.bench.mjs');
    expect({ code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ code: 0, stderr: '' });
    const rows = [
      ...r.stdout.matchAll(
        /^(fuel-library|synthetic) +(\d+) +\d+ +(1 unit each|1-31, seed 1) +(\d+) +(\d+) +(-?\d+) /gm,
      ),
    ];
    expect(rows.map((m) => [m[1], m[2], m[3]])).toEqual([
      ['fuel-library', '7', '1 unit each'],
      ['fuel-library', '7', '1-31, seed 1'],
      ['synthetic', '20', '1 unit each'],
      ['synthetic', '20', '1-31, seed 1'],
    ]);
    for (const m of rows) expect(Number(m[6])).toBe(Number(m[5]) - Number(m[4]));
    expect(Number(rows[0][4])).toBeGreaterThan(0);
    expect(r.stdout).toMatch(/^(both rules: the same makespan in all 4 runs|the rules differ in \d+ of 4 runs; .*)$/m);
  }, 60_000);
});
