import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { Header } from 'tar';
import { extractPluginPackage } from '@granule/plugin-files';
import { BAD_INPUT_CASES } from './bad-input.cases';
import type { InstallCase, PackageCase } from './bad-input.cases';

// The package and install.sh rows of the bad-input table (docs/bad-input.md).

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'granule-bad-input-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A .tar.gz from hand-made headers (node-tar's packer would clean the paths under test). */
async function craft(file: string, entries: PackageCase['entries']): Promise<void> {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const body = Buffer.from(e.body ?? '');
    const header = new Header({
      path: e.path,
      type: e.type ?? 'File',
      linkpath: e.linkpath,
      size: body.length,
      mode: 0o644,
      mtime: new Date(0),
    });
    const block = Buffer.alloc(512);
    header.encode(block, 0);
    blocks.push(block, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  await writeFile(file, gzipSync(Buffer.concat(blocks)));
}

const casesOf = <K extends string>(kind: K) =>
  BAD_INPUT_CASES.filter((c) => c.run.kind === kind).map((c) => [`${c.input} (${c.where})`, c.run] as const);

describe('bad input - plugin packages are refused before anything is written', () => {
  it.each(casesOf('package'))('%s', async (_name, run) => {
    const c = run as PackageCase;
    const file = path.join(dir, 'p.tar.gz');
    await craft(file, c.entries);
    const dest = path.join(dir, 'out');
    await expect(extractPluginPackage(file, dest)).rejects.toThrow(`${file}: ${c.message}`);
    await expect(stat(dest)).rejects.toThrow();
  });
});

describe('bad input - install.sh refuses a uid the rule refuses', () => {
  it.each(casesOf('install'))('%s', (_name, run) => {
    const c = run as InstallCase;
    const script = path.resolve(__dirname, '../../deploy/node-agent/install.sh');
    let result = { status: 0 as number | null, stderr: '' };
    try {
      execFileSync('bash', [script, ...c.args], {
        encoding: 'utf8',
        stdio: 'pipe',
        cwd: path.resolve(__dirname, '../..'),
      });
    } catch (err) {
      result = err as { status: number; stderr: string };
    }
    expect([result.status, result.stderr.trim()]).toEqual([c.exit, c.stderr]);
  });
});
