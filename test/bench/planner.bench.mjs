// npm run bench:planner — plans a synthetic ~300-task release for 100, 1,000 and 10,000 nodes
// through the real CLI (`granule plan -o json`) and prints wall time, size and peak memory.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, openSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeNodes, writeSyntheticRelease } from './synthetic-release.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const sizes = (process.env.BENCH_SIZES ?? '100,1000,10000').split(',').map(Number);
const work = mkdtempSync(path.join(tmpdir(), 'granule-bench-'));
try {
  const taskCount = writeSyntheticRelease(path.join(work, 'release'));
  const rows = [];
  for (const size of sizes) {
    const nodesFile = path.join(work, `nodes-${size}.yaml`);
    writeNodes(nodesFile, size);
    const outFile = path.join(work, `plan-${size}.json`);
    const rssFile = path.join(work, `rss-${size}`);
    const fd = openSync(outFile, 'w');
    const started = process.hrtime.bigint();
    const run = spawnSync(
      path.join(root, 'granule'),
      ['plan', '--tasks', path.join(work, 'release'), '--nodes', nodesFile, '-o', 'json'],
      {
        stdio: ['ignore', fd, 'pipe'],
        env: {
          ...process.env,
          GRANULE_BENCH_RSS_FILE: rssFile,
          NODE_OPTIONS: `-r ${path.join(root, 'test/bench/rss-preload.cjs')}`,
        },
      },
    );
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    closeSync(fd);
    if (run.status !== 0) {
      process.stderr.write(run.stderr);
      throw new Error(`granule plan failed for ${size} nodes (exit ${run.status})`);
    }
    const text = readFileSync(outFile, 'utf8');
    const instances = text.split('\n{"task"').length - 1;
    rows.push({
      nodes: size,
      tasks: taskCount,
      instances,
      outputMiB: statSync(outFile).size / 2 ** 20,
      seconds,
      peakMiB: Number(readFileSync(rssFile, 'utf8')) / 2 ** 20,
    });
    rmSync(outFile);
  }
  console.log('granule plan -o json (whole CLI run: start, parse, plan, print)');
  console.log('nodes    tasks  instances   output MiB   wall s   peak MiB   us/instance');
  for (const r of rows) {
    console.log(
      `${String(r.nodes).padEnd(8)} ${String(r.tasks).padEnd(6)} ${String(r.instances).padEnd(11)} ${r.outputMiB.toFixed(1).padEnd(12)} ${r.seconds.toFixed(2).padEnd(8)} ${r.peakMiB.toFixed(0).padEnd(10)} ${((r.seconds * 1e6) / r.instances).toFixed(2)}`,
    );
  }
  if (rows.length > 1) {
    const first = rows[0];
    const last = rows[rows.length - 1];
    console.log(
      `growth: ${(last.nodes / first.nodes).toFixed(0)}x nodes -> ${(last.seconds / first.seconds).toFixed(1)}x time, ${(last.instances / first.instances).toFixed(1)}x instances`,
    );
  }
  console.log('targets: 1,000 nodes < 1 s, 10,000 nodes < 10 s, peak memory < 1024 MiB');
} finally {
  rmSync(work, { recursive: true, force: true });
}
