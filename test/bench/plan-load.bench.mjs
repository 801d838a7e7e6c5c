// npm run bench:plan-load — how long the orchestrator takes, and how much memory, to load a
// stored plan: the synthetic release with every deploy task on every node (~300 instances per
// node) is planned through the real CLI (`granule plan -o json`), gzipped as the plan store
// keeps it, then decoded as a stream (`decodePlanStream`) into `ExecutablePlanBuilder`, in a
// child process of the orchestrator's default heap. Prints time and peak heap/RSS per size.
// BENCH_SIZES (default 1000,10000) picks the node counts, BENCH_TASKS the release's tasks (default
// 330: ~300 instances per node); BENCH_LEGACY=1 also times the old
// way (whole JSON string, JSON.parse, toExecutablePlan), which fails past ~512 MiB of JSON.
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  createReadStream,
  createWriteStream,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { createGzip, gunzipSync } from 'node:zlib';
import { createRequire } from 'node:module';
import { getHeapStatistics } from 'node:v8';
import { writeNodes, writeSyntheticRelease } from './synthetic-release.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(import.meta.url);
const MiB = 2 ** 20;

async function child(gzFile, mode) {
  const { decodePlanStream } = require(path.join(root, 'dist/libs/infra/plan-store/src/index.js'));
  const { ExecutablePlanBuilder, toExecutablePlan } = require(
    path.join(root, 'dist/libs/domain/deployment-run/src/index.js'),
  );
  let peakHeap = 0;
  const sample = () => (peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed));
  const timer = setInterval(sample, 50);
  const gzip = readFileSync(gzFile);
  const started = process.hrtime.bigint();
  let plan;
  if (mode === 'legacy') {
    const doc = JSON.parse(gunzipSync(gzip).toString('utf8'));
    sample();
    plan = toExecutablePlan(doc);
  } else {
    const builder = new ExecutablePlanBuilder();
    const trailer = await decodePlanStream(gzip, (inst) => builder.add(inst));
    sample();
    plan = builder.finish(trailer.groups, trailer.concurrency);
  }
  sample();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  clearInterval(timer);
  global.gc?.();
  const retained = process.memoryUsage().heapUsed;
  process.stdout.write(
    JSON.stringify({
      instances: plan.size,
      seconds,
      peakHeapMiB: Math.round(peakHeap / MiB),
      retainedMiB: Math.round(retained / MiB),
      maxRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
      heapLimitMiB: Math.round(getHeapStatistics().heap_size_limit / MiB),
    }),
  );
}

async function main() {
  const sizes = (process.env.BENCH_SIZES ?? '1000,10000').split(',').map(Number);
  const modes = process.env.BENCH_LEGACY === '1' ? ['stream', 'legacy'] : ['stream'];
  const work = mkdtempSync(path.join(tmpdir(), 'granule-plan-load-'));
  try {
    const taskCount = Number(process.env.BENCH_TASKS ?? 330);
    writeSyntheticRelease(path.join(work, 'release'), { everyNode: true, taskCount });
    for (const size of sizes) {
      const nodesFile = path.join(work, `nodes-${size}.yaml`);
      writeNodes(nodesFile, size);
      const jsonFile = path.join(work, `plan-${size}.json`);
      const fd = openSync(jsonFile, 'w');
      let started = Date.now();
      const planned = spawnSync(
        process.execPath,
        [
          path.join(root, 'dist/apps/cli/src/main.js'),
          'plan',
          '--tasks',
          path.join(work, 'release'),
          '--nodes',
          nodesFile,
          '-o',
          'json',
        ],
        { stdio: ['ignore', fd, 'inherit'], env: { ...process.env, NODE_OPTIONS: '--max-old-space-size=8192' } },
      );
      closeSync(fd);
      if (planned.status !== 0) throw new Error(`granule plan failed for ${size} nodes (exit ${planned.status})`);
      const planSeconds = (Date.now() - started) / 1000;
      const gzFile = `${jsonFile}.gz`;
      started = Date.now();
      await pipeline(createReadStream(jsonFile), createGzip({ level: 6 }), createWriteStream(gzFile));
      const jsonMiB = statSync(jsonFile).size / MiB;
      rmSync(jsonFile);
      console.log(
        `${size} nodes x ${taskCount} tasks: planned in ${planSeconds.toFixed(1)} s, ${jsonMiB.toFixed(0)} MiB of JSON, ` +
          `${(statSync(gzFile).size / MiB).toFixed(1)} MiB gzip (${((Date.now() - started) / 1000).toFixed(1)} s)`,
      );
      for (const mode of modes) {
        // The orchestrator's default heap: no --max-old-space-size.
        const run = spawnSync(
          process.execPath,
          ['--expose-gc', fileURLToPath(import.meta.url), '--child', gzFile, mode],
          {
            encoding: 'utf8',
            env: { ...process.env, NODE_OPTIONS: '' },
          },
        );
        if (run.status !== 0) {
          const why = (run.stderr.match(/^\S*Error\b[^\n]*|FATAL ERROR[^\n]*/m) ?? [
            run.stderr.trim().split('\n').pop(),
          ])[0];
          console.log(`  ${mode}: failed (exit ${run.status ?? run.signal}): ${why}`);
          continue;
        }
        const r = JSON.parse(run.stdout);
        console.log(
          `  ${mode}: ${r.instances} instances loaded in ${r.seconds.toFixed(1)} s; peak heap ${r.peakHeapMiB} MiB, ` +
            `executable plan ${r.retainedMiB} MiB after GC, max RSS ${r.maxRssMiB} MiB (heap limit ${r.heapLimitMiB} MiB)`,
        );
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--child') await child(process.argv[3], process.argv[4]);
else await main();
