// npm run bench:ready-order — the two rules a node can pick its next ready task by (ADR 0013 §6):
// longest remaining work (what the orchestrator does) and astute's task weight
// (`--ready-order astute-weight`), simulated on the same plans: examples/fuel-library at its 7
// nodes, the synthetic release (test/bench/synthetic-release.mjs) at 100, 300 and 1,000 nodes.
// Each plan runs with one unit per task and with random durations of 1-31 units per task id
// (seeded: the same figures every run); the bench prints both makespans and how far astute's
// weights grow (the largest, and how many instances weigh Infinity).
//
// BENCH_SIZES=100,300 picks the synthetic release's sizes (0: none); BENCH_SEEDS=4,4,2,1 the
// number of random-duration runs at each case, fuel-library first.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeNodes, writeSyntheticRelease } from './synthetic-release.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(import.meta.url);
const { buildPlan, simulatePlan, readyTaskRank, instanceDurations } = require(
  path.join(root, 'dist/libs/domain/planner/src/index.js'),
);
const { parseTaskFile, parseNodesFile } = require(path.join(root, 'dist/libs/domain/task-model/src/index.js'));

const RULES = ['longest-remaining-work', 'astute-weight'];
const sizes = (process.env.BENCH_SIZES ?? '100,300,1000')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const seedsPerCase = (process.env.BENCH_SEEDS ?? '4,4,2,1').split(',').map(Number);

/** Every task of the YAML files in `dir` (sorted by name, as the CLI reads a folder), errors refused. */
function readTasks(dir) {
  const files = readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort();
  return files.flatMap((f) => {
    const file = path.join(dir, f);
    const result = parseTaskFile(readFileSync(file, 'utf8'), file);
    const errors = result.diagnostics.filter((d) => d.severity === 'error');
    if (errors.length) throw new Error(`${file}: ${errors.map((d) => d.message).join('; ')}`);
    return result.tasks;
  });
}

function readNodes(file) {
  const result = parseNodesFile(readFileSync(file, 'utf8'), file);
  if (result.diagnostics.some((d) => d.severity === 'error')) throw new Error(`${file}: invalid nodes`);
  return result.nodes;
}

/** Random whole durations of 1-31 units per task id, from a seeded generator. */
function randomDurations(tasks, seed) {
  let s = seed >>> 0;
  const rand = () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
  return Object.fromEntries(tasks.map((t) => [t.id, 1 + Math.floor(rand() * 31)]));
}

/** How far astute's weights grow on this plan: the largest finite one, and how many are Infinity. */
function weightReach(plan) {
  const weight = readyTaskRank(
    {
      order: plan.order,
      preds: plan.preds,
      anyPreds: plan.anyPreds,
      node: plan.instNode,
      duration: instanceDurations(plan),
    },
    'astute-weight',
  );
  let largest = 0;
  let infinite = 0;
  for (const w of weight) {
    if (w === Infinity) infinite++;
    else if (w > largest) largest = w;
  }
  return { largest, infinite, instances: weight.length };
}

const work = mkdtempSync(path.join(tmpdir(), 'granule-ready-order-'));
const rows = [];
try {
  const fuel = path.join(root, 'examples/fuel-library');
  const cases = [
    { name: 'fuel-library', tasks: readTasks(path.join(fuel, 'tasks')), nodesFile: path.join(fuel, 'nodes.yaml') },
  ];
  if (sizes.length > 0) {
    writeSyntheticRelease(path.join(work, 'release'));
    const tasks = readTasks(path.join(work, 'release'));
    for (const size of sizes) {
      const nodesFile = path.join(work, `nodes-${size}.yaml`);
      writeNodes(nodesFile, size);
      cases.push({ name: 'synthetic', tasks, nodesFile });
    }
  }
  console.log('ready-task order: makespan in units, longest remaining work (LRW) vs astute weight (AW)');
  console.log('graph          nodes  instances  durations        LRW        AW   AW-LRW   largest AW   AW = Infinity');
  cases.forEach((c, k) => {
    const nodes = readNodes(c.nodesFile);
    const plan = buildPlan({ tasks: c.tasks, nodes });
    const reach = weightReach(plan);
    const seeds = seedsPerCase[Math.min(k, seedsPerCase.length - 1)] ?? 1;
    const runs = [{ label: '1 unit each', durations: {} }];
    for (let seed = 1; seed <= seeds; seed++)
      runs.push({ label: `1-31, seed ${seed}`, durations: randomDurations(c.tasks, seed) });
    for (const run of runs) {
      const [lrw, aw] = RULES.map(
        (rule) => simulatePlan(plan, { durations: run.durations, readyOrder: rule }).makespan,
      );
      rows.push({ graph: c.name, nodes: nodes.length, lrw, aw });
      console.log(
        `${c.name.padEnd(14)} ${String(nodes.length).padStart(5)}  ${String(plan.instTask.length).padStart(9)}  ${run.label.padEnd(14)} ${String(lrw).padStart(6)} ${String(aw).padStart(9)} ${String(aw - lrw).padStart(8)}   ${reach.largest.toExponential(1).padStart(10)}   ${reach.infinite} of ${reach.instances}`,
      );
    }
  });
  const differ = rows.filter((r) => r.lrw !== r.aw);
  console.log(
    differ.length === 0
      ? `both rules: the same makespan in all ${rows.length} runs`
      : `the rules differ in ${differ.length} of ${rows.length} runs; astute weight is longer in ${differ.filter((r) => r.aw > r.lrw).length}`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
