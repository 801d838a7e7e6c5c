import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectTestNats } from '@granule/messaging';
import { ArtifactCache } from './artifact-cache';
import { digestFile, packDirectory } from './artifact-pack';
import { ArtifactStore, artifactsBucket, ensureArtifactsBucket } from './artifact-store';

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

it('stores and fetches a 200 MB package while resident memory grows by well under its size', async () => {
  const scripts = path.join(dir, 'deployment_scripts');
  mkdirSync(scripts);
  await bigFile(path.join(scripts, 'big.bin'), SIZE);
  const original = await digestFile(path.join(scripts, 'big.bin'));

  global.gc?.();
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  try {
    const packed = await packDirectory(scripts, path.join(dir, 'package.tar'));
    const store = new ArtifactStore(nc, PREFIX);
    await store.putFile(packed.file, packed);
    const cache = new ArtifactCache(path.join(dir, 'cache'), store);
    const at = await cache.ensure({ name: 'big', version: '1', digest: packed.digest });
    expect(statSync(path.join(at, 'big.bin')).size).toBe(SIZE);
    expect(await digestFile(path.join(at, 'big.bin'))).toEqual(original);
  } finally {
    clearInterval(sampler);
  }
  const grewMiB = Math.round((peak - baseline) / 1024 / 1024);
  process.stdout.write(`200 MiB package: resident memory grew by ${grewMiB} MiB at most\n`);
  expect(grewMiB).toBeLessThan(100);
}, 600_000);
