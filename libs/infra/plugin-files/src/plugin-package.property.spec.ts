import { lstat, mkdir, mkdtemp, readdir, readlink, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { Header } from 'tar';
import { GranuleError } from '@granule/core';
import { extractPluginPackage } from './plugin-package';

// Property (issue 22): generated packages with hostile entries (absolute paths, '..', links to
// anywhere, link chains, entries beneath links) never write outside the destination, and every
// link left inside it resolves inside it. fast-check prints the seed and entries on failure.

interface Entry {
  path: string;
  type: 'File' | 'Directory' | 'SymbolicLink' | 'Link';
  linkpath?: string;
}

async function craft(file: string, entries: Entry[]): Promise<void> {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const body = Buffer.from(e.type === 'File' ? 'pwned' : '');
    const header = new Header({ path: e.path, type: e.type, linkpath: e.linkpath, size: body.length, mode: 0o644 });
    const block = Buffer.alloc(512);
    header.encode(block, 0);
    blocks.push(block, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  await writeFile(file, gzipSync(Buffer.concat(blocks)));
}

/** Every path under `dir`, links not followed. */
async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const name of await readdir(dir)) {
    const full = path.join(dir, name);
    out.push(full);
    if ((await lstat(full)).isDirectory()) out.push(...(await walk(full)));
  }
  return out;
}

/** Where `p` leads on disk, following links component by component (the tail may not exist). */
async function resolveOnDisk(p: string, hops = 0): Promise<string> {
  const parts = path.resolve(p).split(path.sep).filter(Boolean);
  let at = '/';
  for (let i = 0; i < parts.length; i++) {
    const next = path.join(at, parts[i]);
    const info = await lstat(next).catch(() => undefined);
    if (info?.isSymbolicLink()) {
      if (hops > 40) return '/loop';
      const target = path.resolve(at, await readlink(next));
      return resolveOnDisk(path.join(target, ...parts.slice(i + 1)), hops + 1);
    }
    at = next;
  }
  return at;
}

const segment = fc.constantFrom('a', 'b', 'deployment_scripts', '..', '.', 'x');
const rel = fc.array(segment, { minLength: 1, maxLength: 3 }).map((s) => s.join('/'));
// Entries often sit beneath an earlier entry (so link chains such as `d/a -> ..`, then
// `d/a/b -> ../x` come up), and links point up, across or out.
const raw = fc.record({
  parent: fc.nat(),
  name: fc.oneof({ weight: 5, arbitrary: rel }, { weight: 1, arbitrary: rel.map((r) => `/tmp/${r}`) }),
  type: fc.constantFrom<Entry['type']>('File', 'Directory', 'SymbolicLink', 'SymbolicLink', 'Link'),
  linkpath: fc.oneof(rel, fc.constantFrom('/', '/etc/passwd', '..', '../..', '.', '../x', '../../x')),
});
const entries: fc.Arbitrary<Entry[]> = fc.array(raw, { minLength: 1, maxLength: 8 }).map((list) => {
  const out: Entry[] = [];
  for (const e of list) {
    const under =
      out.length > 0 && e.parent % 2 === 0 && !e.name.startsWith('/') ? out[e.parent % out.length].path : '';
    out.push({ path: under ? `${under}/${e.name}` : e.name, type: e.type, linkpath: e.linkpath });
  }
  return out;
});

describe('extractPluginPackage - hostile packages never write outside the destination', () => {
  it('generated packages: refused with a PluginError, or extracted entirely inside', async () => {
    await fc.assert(
      fc.asyncProperty(entries, async (entries) => {
        const sandbox = await mkdtemp(path.join(tmpdir(), 'granule-pkg-prop-'));
        try {
          const file = path.join(sandbox, 'p.tar.gz');
          await mkdir(path.join(sandbox, 'sentinel'));
          await craft(file, entries);
          const dest = path.join(sandbox, 'dest');
          try {
            await extractPluginPackage(file, dest);
          } catch (err) {
            expect(err).toBeInstanceOf(GranuleError);
          }
          const outside = (await walk(sandbox)).filter((p) => p !== dest && !p.startsWith(dest + path.sep));
          expect(outside.sort()).toEqual([file, path.join(sandbox, 'sentinel')]);
          const realDest = await realpath(dest).catch(() => undefined);
          if (realDest === undefined) return;
          for (const p of await walk(dest)) {
            if (!(await lstat(p)).isSymbolicLink()) continue;
            const leads = await resolveOnDisk(p);
            expect([p, leads.startsWith(realDest + path.sep) || leads === realDest]).toEqual([p, true]);
          }
        } finally {
          await rm(sandbox, { recursive: true, force: true });
        }
      }),
      {
        numRuns: 150,
        // Found by CI: a self-looping link, then the same path again as `a/.` (a raw EEXIST).
        examples: [
          [
            [
              { path: 'a', type: 'SymbolicLink', linkpath: 'a' },
              { path: 'a/.', type: 'SymbolicLink', linkpath: 'deployment_scripts' },
            ],
          ],
        ],
      },
    );
  });
});
