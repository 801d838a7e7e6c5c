import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ArtifactCache, type ArtifactSource } from './artifact-cache';
import { packDirectory } from './artifact-pack';

// The pack and the cache on the local disk; the source is a folder of tars standing in for the
// bucket (the bucket itself is in artifacts.int.spec.ts).
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'granule-artifact-unit-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function scripts(root: string, mtime: Date): string {
  mkdirSync(path.join(root, 'b/c'), { recursive: true });
  writeFileSync(path.join(root, 'b/c/z.txt'), 'z\n');
  writeFileSync(path.join(root, 'a.sh'), '#!/bin/sh\n');
  chmodSync(path.join(root, 'a.sh'), 0o750);
  for (const f of ['b/c/z.txt', 'a.sh']) utimesSync(path.join(root, f), mtime, mtime);
  return root;
}

/** Tars by digest in a folder; counts fetches; can fail after writing half a file. */
class FolderSource implements ArtifactSource {
  fetched = 0;
  failNext = false;
  constructor(private readonly tars: Map<string, string>) {}
  async fetchTo(digest: string, file: string): Promise<void> {
    this.fetched++;
    const tar = this.tars.get(digest);
    if (!tar) throw new Error(`no ${digest}`);
    if (this.failNext) {
      this.failNext = false;
      writeFileSync(file, readFileSync(tar).subarray(0, 100));
      throw new Error('connection lost');
    }
    copyFileSync(tar, file);
  }
}

describe('packDirectory', () => {
  it('gives the same bytes for the same files, whatever their mtime and group bits', async () => {
    const one = await packDirectory(scripts(path.join(dir, 'one'), new Date(1e12)), path.join(dir, 'one.tar'));
    const two = await packDirectory(scripts(path.join(dir, 'two'), new Date(2e12)), path.join(dir, 'two.tar'));
    chmodSync(path.join(dir, 'two/a.sh'), 0o700);
    const three = await packDirectory(path.join(dir, 'two'), path.join(dir, 'three.tar'));
    expect(one.digest).toMatch(/^[0-9a-f]{64}$/);
    expect([two.digest, three.digest]).toEqual([one.digest, one.digest]);
    expect(readFileSync(one.file).equals(readFileSync(two.file))).toBe(true);
    expect(one.entries).toBe(4);
  });

  it('gives another digest when a file changes or loses its executable bit', async () => {
    const base = await packDirectory(scripts(path.join(dir, 'p'), new Date(1e12)), path.join(dir, 'p1.tar'));
    chmodSync(path.join(dir, 'p/a.sh'), 0o644);
    const noExec = await packDirectory(path.join(dir, 'p'), path.join(dir, 'p2.tar'));
    writeFileSync(path.join(dir, 'p/b/c/z.txt'), 'y\n');
    const changed = await packDirectory(path.join(dir, 'p'), path.join(dir, 'p3.tar'));
    expect(new Set([base.digest, noExec.digest, changed.digest]).size).toBe(3);
  });
});

describe('ArtifactCache', () => {
  it('leaves no entry behind a fetch that failed half-way, and the next use fetches it whole', async () => {
    const packed = await packDirectory(scripts(path.join(dir, 's'), new Date(1e12)), path.join(dir, 's.tar'));
    const source = new FolderSource(new Map([[packed.digest, packed.file]]));
    const cache = new ArtifactCache(path.join(dir, 'cache'), source);
    const ref = { name: 's', version: '1', digest: packed.digest };
    source.failNext = true;
    await expect(cache.ensure(ref)).rejects.toThrow('connection lost');
    expect(readdirSync(path.join(dir, 'cache'))).toEqual([]);
    const at = await cache.ensure(ref);
    expect(readFileSync(path.join(at, 'b/c/z.txt'), 'utf8')).toBe('z\n');
    expect(source.fetched).toBe(2);
    expect(readdirSync(path.join(dir, 'cache'))).toEqual([packed.digest]);
  });

  it('refuses bytes whose SHA-256 is not the digest asked for, and keeps nothing of them', async () => {
    const a = await packDirectory(scripts(path.join(dir, 'a'), new Date(1e12)), path.join(dir, 'a.tar'));
    const wrong = 'f'.repeat(64);
    const cache = new ArtifactCache(path.join(dir, 'cache'), new FolderSource(new Map([[wrong, a.file]])));
    await expect(cache.ensure({ name: 'x', version: '1', digest: wrong })).rejects.toMatchObject({
      code: 'ARTIFACT_DAMAGED',
      message: expect.stringMatching(/^package x 1: the fetched bytes have SHA-256 \w{12}…, not ffffffffffff…$/),
    });
    expect(readdirSync(path.join(dir, 'cache'))).toEqual([]);
  });

  it('fetches once for tasks asking at the same time', async () => {
    const packed = await packDirectory(scripts(path.join(dir, 's'), new Date(1e12)), path.join(dir, 's.tar'));
    const source = new FolderSource(new Map([[packed.digest, packed.file]]));
    const cache = new ArtifactCache(path.join(dir, 'cache'), source);
    const ref = { name: 's', version: '1', digest: packed.digest };
    const dirs = await Promise.all([cache.ensure(ref), cache.ensure(ref), cache.ensure(ref)]);
    expect(new Set(dirs).size).toBe(1);
    expect(source.fetched).toBe(1);
  });

  it('refuses a digest that is not 64 hex digits without fetching', async () => {
    const source = new FolderSource(new Map());
    const cache = new ArtifactCache(path.join(dir, 'cache'), source);
    await expect(cache.ensure({ name: 'x', version: '1', digest: '../../etc' })).rejects.toMatchObject({
      code: 'ARTIFACT_NOT_FOUND',
    });
    expect(source.fetched).toBe(0);
  });

  describe('bound', () => {
    /** Packs a folder holding one file of `size` bytes; returns its ref and tar. */
    async function pkg(
      name: string,
      size: number,
    ): Promise<{ ref: { name: string; version: string; digest: string }; tar: string }> {
      const root = path.join(dir, `src-${name}`);
      mkdirSync(root, { recursive: true });
      writeFileSync(path.join(root, 'data.bin'), Buffer.alloc(size, name));
      const packed = await packDirectory(root, path.join(dir, `${name}.tar`));
      return { ref: { name, version: '1', digest: packed.digest }, tar: packed.file };
    }
    /** Makes `digest`'s entry look used at `seconds` (orders eviction without sleeping). */
    function usedAt(digest: string, seconds: number): void {
      const marker = path.join(dir, 'cache', digest, 'complete.json');
      utimesSync(marker, seconds, seconds);
    }

    it('removes the least recently used copies once a fetch takes it over the bound', async () => {
      const [a, b, c] = await Promise.all([pkg('a', 4000), pkg('b', 4000), pkg('c', 4000)]);
      const source = new FolderSource(new Map([a, b, c].map((p) => [p.ref.digest, p.tar])));
      const evicted: string[] = [];
      const cache = new ArtifactCache(
        path.join(dir, 'cache'),
        source,
        { evicted: (e) => evicted.push(e.name) },
        {
          maxBytes: 9000,
        },
      );
      await cache.ensure(a.ref);
      await cache.ensure(b.ref);
      usedAt(a.ref.digest, 1000);
      usedAt(b.ref.digest, 2000);
      await cache.ensure(a.ref); // a used again: now b is the least recently used
      await cache.ensure(c.ref);
      expect(evicted).toEqual(['b']);
      expect(readdirSync(path.join(dir, 'cache')).sort()).toEqual([a.ref.digest, c.ref.digest].sort());
      // b comes back whole when asked for again, and pushes out the next least recently used.
      usedAt(a.ref.digest, 3000);
      await cache.ensure(b.ref);
      expect(evicted).toEqual(['b', 'a']);
      expect(source.fetched).toBe(4);
    });

    it('never removes a copy a running task holds, nor one just fetched that alone exceeds the bound', async () => {
      const [a, b, big] = await Promise.all([pkg('a', 4000), pkg('b', 4000), pkg('big', 20000)]);
      const source = new FolderSource(new Map([a, b, big].map((p) => [p.ref.digest, p.tar])));
      const cache = new ArtifactCache(path.join(dir, 'cache'), source, {}, { maxBytes: 9000 });
      const heldA = await cache.hold(a.ref);
      await cache.ensure(b.ref);
      usedAt(a.ref.digest, 1000);
      usedAt(b.ref.digest, 2000);
      const heldBig = await cache.hold(big.ref);
      // a is the oldest but held: b goes; big stays although it alone is over the bound.
      expect(readdirSync(path.join(dir, 'cache')).sort()).toEqual([a.ref.digest, big.ref.digest].sort());
      expect(readFileSync(path.join(heldA.dir, 'data.bin')).length).toBe(4000);
      heldA.release();
      heldA.release(); // idempotent: does not release another task's hold
      heldBig.release();
      await cache.ensure(b.ref);
      // Nothing is held now: everything but the copy just fetched goes to get under the bound.
      expect(readdirSync(path.join(dir, 'cache'))).toEqual([b.ref.digest]);
    });
  });
});
