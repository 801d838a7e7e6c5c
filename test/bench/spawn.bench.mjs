// npm run bench:spawn — what starting one task process costs the node-agent: through the native
// helper (granule-spawn) and through Node.js's child_process in the agent's own process, both
// executing the same launch plan (ADR 0009). A fork costs in proportion to the memory of the
// process that forks, so this process first grows to an agent's resident size.
//
//   node test/bench/spawn.bench.mjs   (npm run bench:spawn builds dist/ first)
//   BENCH_SPAWNS=400      spawns per round, one after another (an agent runs one task at a time)
//   BENCH_ROUNDS=3        rounds per spawner; the spawners take turns, so load on the shared
//                         machine falls on both alike
//   BENCH_RSS_MB=120      resident size to grow to first (a running agent's, ADR 0008)
//   BENCH_COMMAND='/bin/bash -c true'   what each spawn runs (what the orchestrator bench's tasks run)
//
// Prints per spawner: how long spawn() holds the event loop, spawn() -> process running,
// spawn() -> ended (exited and output drained), and the CPU time per spawn of this process (the
// agent), of the helper, and of the task processes themselves.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function whole(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) {
    process.stderr.write(`${name}: expected a whole number above 0, got ${JSON.stringify(raw)}\n`);
    process.exit(2);
  }
  return n;
}
const SPAWNS = whole('BENCH_SPAWNS', 400);
const ROUNDS = whole('BENCH_ROUNDS', 3);
const RSS_MB = whole('BENCH_RSS_MB', 120);
const [command, ...args] = (process.env.BENCH_COMMAND || '/bin/bash -c true').split(' ');

let lib;
try {
  lib = require(path.join(root, 'dist/libs/infra/task-runners/src/index.js'));
} catch {
  process.stderr.write('dist/ is not built: run npm run build (npm run bench:spawn does)\n');
  process.exit(1);
}
const { AgentProcessSpawner, planLaunch, taskEnvironment } = lib;

const TICK_MS = 10; // USER_HZ is 100 on Linux
/** [own, reaped children's] CPU time of `pid` in ms, from /proc (10 ms ticks). */
function cpuOf(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return [(Number(f[11]) + Number(f[12])) * TICK_MS, (Number(f[13]) + Number(f[14])) * TICK_MS];
}
const rssMb = () => process.memoryUsage.rss() / 2 ** 20;

// Grow to an agent's size: touched memory, so its page tables are what a fork copies.
const ballast = [];
while (rssMb() < RSS_MB) ballast.push(Buffer.alloc(4 * 2 ** 20, 1));

const inherited = Object.fromEntries(Object.entries(process.env).filter(([, v]) => v !== undefined));
const identity = { rootDir: root, runId: 'bench', taskId: 'spawn', nodeUid: 'bench' };
const plan = planLaunch(
  { command, args, cwd: root, env: taskEnvironment(inherited, {}, identity) },
  { timeoutMs: null, killGraceMs: 5000 },
);

const spawners = {
  native: new AgentProcessSpawner({ helper: 'native' }),
  node: new AgentProcessSpawner({ helper: 'node' }),
};
if (spawners.native.helperKind !== 'native') {
  process.stderr.write('the native helper is not built (npm run build builds it; it needs a C compiler)\n');
  process.exit(1);
}
await spawners.native.start();
const helperPid = spawners.native.helperPid;

const samples = Object.fromEntries(Object.keys(spawners).map((k) => [k, { held: [], running: [], ended: [] }]));
const cpu = Object.fromEntries(Object.keys(spawners).map((k) => [k, { agent: 0, helper: 0, tasks: 0 }]));

async function round(kind) {
  const spawner = spawners[kind];
  const reaper = kind === 'native' ? helperPid : process.pid;
  const usage0 = process.cpuUsage();
  const [helper0] = cpuOf(helperPid);
  const [, tasks0] = cpuOf(reaper);
  for (let i = 0; i < SPAWNS; i++) {
    const t0 = performance.now();
    const pending = spawner.spawn(plan, () => undefined);
    const t1 = performance.now();
    const child = await pending;
    const t2 = performance.now();
    const exit = await child.exited;
    const t3 = performance.now();
    if (exit.exitCode !== 0) throw new Error(`${command} ended with ${JSON.stringify(exit)}`);
    const s = samples[kind];
    s.held.push(t1 - t0);
    s.running.push(t2 - t0);
    s.ended.push(t3 - t0);
  }
  const usage = process.cpuUsage(usage0);
  cpu[kind].agent += (usage.user + usage.system) / 1000;
  cpu[kind].helper += cpuOf(helperPid)[0] - helper0;
  cpu[kind].tasks += cpuOf(reaper)[1] - tasks0;
}

const load0 = loadavg();
for (let r = 0; r < ROUNDS; r++) for (const kind of Object.keys(spawners)) await round(kind);
const load1 = loadavg();
spawners.native.close();
spawners.node.close();

function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
const n = SPAWNS * ROUNDS;
const ms = (v) => v.toFixed(2).padStart(6);
const cell = (values) => `median ${ms(percentile(values, 50))}   p99 ${ms(percentile(values, 99))}`;
const per = (total) => ms(total / n);
const pad = (s) => s.padEnd(34);

console.log(
  `spawn benchmark: ${ROUNDS} rounds x ${SPAWNS} spawns of \`${[command, ...args].join(' ')}\` per spawner, ` +
    `this process at ${rssMb().toFixed(0)} MB resident; load average ${load0[0].toFixed(2)} before, ${load1[0].toFixed(2)} after`,
);
console.log(`${pad('')}${'native helper'.padEnd(34)}Node.js child_process in the agent`);
for (const [label, key] of [
  ['event loop held by spawn() (ms)', 'held'],
  ['spawn() -> running (ms)', 'running'],
  ['spawn() -> ended (ms)', 'ended'],
]) {
  console.log(`${pad(label)}${cell(samples.native[key]).padEnd(34)}${cell(samples.node[key])}`);
}
console.log(
  `${pad('CPU per spawn (ms): agent')}${per(cpu.native.agent).padEnd(34)}${per(cpu.node.agent)}\n` +
    `${pad('                    helper')}${per(cpu.native.helper).padEnd(34)}${per(cpu.node.helper)}   (10 ms ticks)\n` +
    `${pad('                    task')}${per(cpu.native.tasks).padEnd(34)}${per(cpu.node.tasks)}   (10 ms ticks)\n` +
    `${pad('                    agent + helper')}${per(cpu.native.agent + cpu.native.helper).padEnd(34)}${per(cpu.node.agent + cpu.node.helper)}`,
);
