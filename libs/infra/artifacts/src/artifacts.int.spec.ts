import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectTestNats } from '@granule/messaging';
import { ArtifactCache } from './artifact-cache';
import { packDirectory } from './artifact-pack';
import { ArtifactStore, artifactsBucket, ensureArtifactsBucket } from './artifact-store';
import { ArtifactError } from './artifact.errors';

// Real NATS (the tests' NATS tools/setup.sh starts, JetStream on); a bucket of this suite's own.
const PREFIX = `artifacts_int_${process.pid}`;
let nc: NatsConnection;
let dir: string;
let store: ArtifactStore;

function plugin(root: string): string {
  const scripts = path.join(root, 'deployment_scripts');
  mkdirSync(path.join(scripts, 'puppet/modules/m'), { recursive: true });
  writeFileSync(path.join(scripts, 'deploy.sh'), '#!/bin/sh\necho deployed\n');
  chmodSync(path.join(scripts, 'deploy.sh'), 0o755);
  writeFileSync(path.join(scripts, 'puppet/site.pp'), 'notify { "hi": }\n');
  writeFileSync(path.join(scripts, 'puppet/modules/m/init.pp'), 'class m {}\n');
  return scripts;
}

beforeAll(async () => {
  nc = await connectTestNats('artifacts-test');
  await ensureArtifactsBucket(nc, PREFIX);
  store = new ArtifactStore(nc, PREFIX);
  dir = mkdtempSync(path.join(os.tmpdir(), 'granule-artifacts-int-'));
});

afterAll(async () => {
  await jetstreamManager(nc)
    .then((jsm) => jsm.streams.delete(`OBJ_${artifactsBucket(PREFIX)}`))
    .catch(() => undefined);
  await nc.close();
  rmSync(dir, { recursive: true, force: true });
});

jest.setTimeout(30_000);

describe('artifacts in a NATS object store', () => {
  it('stores a packed folder once, and an agent cache unpacks it byte for byte, fetching it once', async () => {
    const scripts = plugin(path.join(dir, 'p1'));
    const packed = await packDirectory(scripts, path.join(dir, 'p1.tar'));
    expect(await store.putFile(packed.file, packed)).toEqual({ stored: true });
    expect(await store.putFile(packed.file, packed)).toEqual({ stored: false });
    expect(await store.info(packed.digest)).toEqual({ digest: packed.digest, size: packed.size });

    const fetched: string[] = [];
    const cache = new ArtifactCache(path.join(dir, 'cache1'), store, { fetched: (r) => fetched.push(r.digest) });
    const ref = { name: 'p1', version: '1.0.0', digest: packed.digest };
    const at = await cache.ensure(ref);
    expect(readFileSync(path.join(at, 'puppet/site.pp'), 'utf8')).toBe('notify { "hi": }\n');
    expect(statSync(path.join(at, 'deploy.sh')).mode & 0o111).not.toBe(0);
    expect(await cache.ensure(ref)).toBe(at);
    // A new process (a new cache over the same folder) checks the files and does not fetch either.
    const again = new ArtifactCache(path.join(dir, 'cache1'), store);
    expect(await again.ensure(ref)).toBe(at);
    expect(cache.fetches + again.fetches).toBe(1);
    expect(fetched).toEqual([packed.digest]);
  });

  it('fetches again over a changed file, a half-written entry or a marker of another package', async () => {
    const packed = await packDirectory(plugin(path.join(dir, 'p2')), path.join(dir, 'p2.tar'));
    await store.putFile(packed.file, packed);
    const ref = { name: 'p2', version: '1', digest: packed.digest };
    const root = path.join(dir, 'cache2');
    const discarded: string[] = [];
    const fresh = (): ArtifactCache => new ArtifactCache(root, store, { discarded: (_r, why) => discarded.push(why) });
    const at = await fresh().ensure(ref);

    writeFileSync(path.join(at, 'deploy.sh'), '#!/bin/sh\necho tampered\n');
    let cache = fresh();
    await cache.ensure(ref);
    expect(readFileSync(path.join(at, 'deploy.sh'), 'utf8')).toBe('#!/bin/sh\necho deployed\n');
    expect(cache.fetches).toBe(1);

    rmSync(path.join(root, packed.digest, 'complete.json'));
    cache = fresh();
    await cache.ensure(ref);
    expect(cache.fetches).toBe(1);

    writeFileSync(
      path.join(root, packed.digest, 'complete.json'),
      JSON.stringify({ digest: 'f'.repeat(64), files: [] }),
    );
    cache = fresh();
    await cache.ensure(ref);
    expect(cache.fetches).toBe(1);
    expect(discarded).toEqual([
      'deploy.sh was changed',
      'it has no complete.json (written half)',
      'its complete.json is for another package',
    ]);
  });

  it('refuses an artifact that is not there, and bytes that are not what their name says', async () => {
    const cache = new ArtifactCache(path.join(dir, 'cache3'), store);
    const missing = await cache.ensure({ name: 'gone', version: '1', digest: 'e'.repeat(64) }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ArtifactError);
    expect(missing).toMatchObject({ code: 'ARTIFACT_NOT_FOUND' });
    expect((missing as Error).message).toMatch(/artifact eeeeeeeeeeee… in object store \S+_ARTIFACTS does not exist/);

    // Someone overwrote the object under a digest that is not its own.
    const forged = 'd'.repeat(64);
    const bucket = await new Objm(nc).open(artifactsBucket(PREFIX));
    await bucket.putBlob({ name: forged }, new TextEncoder().encode('not the package'));
    const damaged = await cache.ensure({ name: 'forged', version: '1', digest: forged }).catch((e: unknown) => e);
    expect(damaged).toMatchObject({ code: 'ARTIFACT_DAMAGED' });
    expect((damaged as Error).message).toMatch(/is not what its name says \(15 bytes/);
    expect(cache.fetches).toBe(0);
  });

  it('refuses an upload whose bytes are not the digest it names, and keeps nothing of it', async () => {
    const digest = 'c'.repeat(64);
    const upload = (async function* () {
      yield new TextEncoder().encode('something else');
    })();
    await expect(store.putStream({ digest, size: 14 }, upload)).rejects.toMatchObject({ code: 'ARTIFACT_DAMAGED' });
    expect(await store.info(digest)).toBeUndefined();
  });

  it('stops an upload that goes on past its declared size, without reading the rest, and keeps nothing', async () => {
    const digest = 'd'.repeat(64);
    let sent = 0;
    // An endless stream of 64 KiB chunks: only a refusal as the bytes pass the size ends it.
    const endless = (async function* () {
      for (;;) {
        sent += 1;
        yield new Uint8Array(64 * 1024);
      }
    })();
    const refused = await store.putStream({ digest, size: 100_000 }, endless).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'ARTIFACT_TOO_LARGE' });
    expect((refused as Error).message).toMatch(
      /the upload of artifact dddddddddddd… in object store \S+ goes on past the 97.7 KiB it declared; it was stopped and nothing was kept/,
    );
    expect(sent).toBeLessThanOrEqual(3);
    expect(await store.info(digest)).toBeUndefined();
  });
});
