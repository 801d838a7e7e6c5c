import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { create } from 'tar';
import { readPluginSourceFiles } from '@granule/config-store-client';
import { connectTestNats } from '@granule/messaging';
import { ArtifactCache } from './artifact-cache';
import { digestFile, packDirectory } from './artifact-pack';
import { ArtifactStore, artifactsBucket, ensureArtifactsBucket } from './artifact-store';
import { storePluginArtifact } from './plugin-artifact';

// A 200 MB package goes through pack, store, fetch and unpack in chunks: the process's resident
// memory grows by a small fraction of the package, never by the package (ADR 0026).
const SIZE = 200 * 1024 * 1024;
const PREFIX = `artifacts_large_${process.pid}`;
let nc: NatsConnection;
let dir: string;

beforeAll(async () => {
  nc = await connectTestNats('large-artifact-test');
  await ensureArtifactsBucket(nc, PREFIX);
  dir = mkdtempSync(path.join(os.tmpdir(), 'granule-artifacts-large-'));
});

afterAll(async () => {
  await jetstreamManager(nc)
    .then((jsm) => jsm.streams.delete(`OBJ_${artifactsBucket(PREFIX)}`))
    .catch(() => undefined);
  await nc.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Writes `bytes` of incompressible data without holding more than 1 MiB of it. */
async function bigFile(file: string, bytes: number): Promise<void> {
  const out = createWriteStream(file);
  const block = randomBytes(1024 * 1024);
  for (let written = 0; written < bytes; written += block.length) {
    block.writeUInt32LE(written, 0); // no two blocks alike
    if (!out.write(block)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  }
  await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
}

/**
 * The bound: well under the package's 200 MiB, so a copy of it held whole fails (the .tar.gz
 * path that held it whole grew by 343 MiB), with room for what V8 keeps before it collects on a
 * loaded machine (34 MiB quiet, 122 MiB seen under CI load for the folder path).
 */
const MAX_GROWTH_MIB = 160;

/** Samples resident memory while `work` runs; returns how many MiB it grew by at most. */
async function rssGrowthMiB(work: () => Promise<void>): Promise<number> {
  global.gc?.();
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  try {
    await work();
  } finally {
    clearInterval(sampler);
  }
  return Math.round((peak - baseline) / 1024 / 1024);
}

it('stores and fetches a 200 MB package while resident memory grows by well under its size', async () => {
  const scripts = path.join(dir, 'deployment_scripts');
  mkdirSync(scripts);
  await bigFile(path.join(scripts, 'big.bin'), SIZE);
  const original = await digestFile(path.join(scripts, 'big.bin'));

  const grewMiB = await rssGrowthMiB(async () => {
    const packed = await packDirectory(scripts, path.join(dir, 'package.tar'));
    const store = new ArtifactStore(nc, PREFIX);
    await store.putFile(packed.file, packed);
    const cache = new ArtifactCache(path.join(dir, 'cache'), store);
    const at = await cache.ensure({ name: 'big', version: '1', digest: packed.digest });
    expect(statSync(path.join(at, 'big.bin')).size).toBe(SIZE);
    expect(await digestFile(path.join(at, 'big.bin'))).toEqual(original);
  });
  process.stdout.write(`200 MiB package: resident memory grew by ${grewMiB} MiB at most\n`);
  expect(grewMiB).toBeLessThan(MAX_GROWTH_MIB);
}, 600_000);

it('installs a 200 MB .tar.gz package (read, unpack, pack, store) while memory grows by well under its size', async () => {
  const plugin = path.join(dir, 'big-plugin');
  mkdirSync(path.join(plugin, 'deployment_scripts'), { recursive: true });
  writeFileSync(path.join(plugin, 'metadata.yaml'), 'name: big\nversion: 1.0.0\n');
  await bigFile(path.join(plugin, 'deployment_scripts', 'big.bin'), SIZE);
  // What the stored artifact must be: the deployment files packed straight from the folder.
  const expected = await packDirectory(path.join(plugin, 'deployment_scripts'), path.join(dir, 'expected.tar'));
  const pkg = path.join(dir, 'big-1.0.0.tar.gz');
  await create({ file: pkg, cwd: plugin, gzip: { level: 1 }, portable: true }, ['metadata.yaml', 'deployment_scripts']);
  rmSync(plugin, { recursive: true, force: true });
  const tmpBefore = readdirSync(os.tmpdir()).filter((n) => n.startsWith('granule-artifact-')).length;

  const store = new ArtifactStore(nc, PREFIX);
  let files: Record<string, string> = {};
  let stored: { digest: string; size: number } | undefined;
  // What `granule plugin install FILE.tar.gz` does: the install request's files, then the artifact.
  const grewMiB = await rssGrowthMiB(async () => {
    ({ files } = await readPluginSourceFiles(pkg));
    stored = await storePluginArtifact(store, pkg);
  });
  process.stdout.write(`200 MiB .tar.gz package: resident memory grew by ${grewMiB} MiB at most\n`);
  expect(files).toEqual({
    'metadata.yaml': 'name: big\nversion: 1.0.0\n',
    'deployment_scripts/': '',
    'deployment_scripts/big.bin': '',
  });
  expect(stored).toEqual({ digest: expected.digest, size: expected.size });
  expect(await store.info(expected.digest)).toEqual({ digest: expected.digest, size: expected.size });
  expect(grewMiB).toBeLessThan(MAX_GROWTH_MIB);
  // The package was unpacked into a temporary folder that is gone again.
  expect(readdirSync(os.tmpdir()).filter((n) => n.startsWith('granule-artifact-')).length).toBe(tmpBefore);
}, 600_000);
