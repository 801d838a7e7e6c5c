import { createHash } from 'node:crypto';
import { mkdtemp, mkdir, readFile, readdir, rm, stat, symlink, writeFile, cp, utimes, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { Header, ReadEntry, list } from 'tar';
import { InvalidInputError } from '@granule/core';
import { validatePlugin } from '@granule/plugin';
import { NodePluginFiles } from './node-plugin-files';
import { buildPluginPackage, extractPluginPackage, readPackageEntries, readPluginPackage } from './plugin-package';
import { createPluginFromTemplate } from './plugin-source';

const EXAMPLE = path.resolve(__dirname, '../../../../examples/plugins/example-v5');
let tmp: string;
beforeEach(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), 'granule-plugin-spec-'));
});
afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('buildPluginPackage', () => {
  it('same input, byte-identical output - even after mtimes and the copy location change', async () => {
    const a = await buildPluginPackage(EXAMPLE, path.join(tmp, 'a.tar.gz'));
    const copy = path.join(tmp, 'copy');
    await cp(EXAMPLE, copy, { recursive: true });
    await utimes(path.join(copy, 'metadata.yaml'), new Date(2001, 1, 1), new Date(2001, 1, 1));
    await chmod(path.join(copy, 'metadata.yaml'), 0o664);
    const b = await buildPluginPackage(copy, path.join(tmp, 'b.tar.gz'));
    const [ba, bb] = await Promise.all([readFile(a.file), readFile(b.file)]);
    expect(Buffer.compare(ba, bb)).toBe(0);
    expect(a.sha256).toBe(createHash('sha256').update(ba).digest('hex'));
    expect(ba.subarray(4, 8)).toEqual(Buffer.from([0, 0, 0, 0])); // gzip MTIME field
  });

  it('sorted entries with fixed owner, mtime and modes, plus MANIFEST.json and checksums.sha256', async () => {
    const built = await buildPluginPackage(EXAMPLE, path.join(tmp, 'p.tar.gz'));
    const entries: { path: string; mode?: number; uid?: number; gid?: number; uname?: string; mtime?: number }[] = [];
    await list({
      file: built.file,
      onReadEntry: (e: ReadEntry) =>
        entries.push({ path: e.path, mode: e.mode, uid: e.uid, gid: e.gid, uname: e.uname, mtime: e.mtime?.getTime() }),
    });
    expect(entries.map((e) => e.path)).toEqual([
      'MANIFEST.json',
      'checksums.sha256',
      'deployment_scripts/',
      'deployment_scripts/install-agent.sh',
      'deployment_tasks.yaml',
      'environment_config.yaml',
      'metadata.yaml',
      'node_roles.yaml',
      'repositories/',
      'repositories/debian/',
      'repositories/debian/README.md',
    ]);
    const mode = (p: string) => entries.find((e) => e.path === p)?.mode;
    expect([mode('metadata.yaml'), mode('deployment_scripts/'), mode('deployment_scripts/install-agent.sh')]).toEqual([
      0o644, 0o755, 0o755,
    ]);
    expect(new Set(entries.map((e) => `${e.uid ?? 0}:${e.gid ?? 0}:${e.uname ?? ''}`))).toEqual(new Set(['0:0:']));
    expect(new Set(entries.filter((e) => !e.path.endsWith('/')).map((e) => e.mtime))).toEqual(new Set([0]));

    const out = path.join(tmp, 'x');
    await extractPluginPackage(built.file, out);
    const manifest = JSON.parse(await readFile(path.join(out, 'MANIFEST.json'), 'utf8')) as {
      name: string;
      files: { path: string; sha256: string }[];
    };
    expect(manifest.name).toBe('example-v5');
    const meta = await readFile(path.join(EXAMPLE, 'metadata.yaml'));
    expect(manifest.files.find((f) => f.path === 'metadata.yaml')?.sha256).toBe(
      createHash('sha256').update(meta).digest('hex'),
    );
    const sums = await readFile(path.join(out, 'checksums.sha256'), 'utf8');
    expect(sums.split('\n')).toContain(`${createHash('sha256').update(meta).digest('hex')}  metadata.yaml`);
    expect((await validatePlugin(new NodePluginFiles(out))).valid).toBe(true);
    expect((await validatePlugin(await readPluginPackage(built.file))).valid).toBe(true);
  });

  it('refuses an invalid plugin with the validator report', async () => {
    const dir = path.join(tmp, 'bad');
    await cp(EXAMPLE, dir, { recursive: true });
    await writeFile(
      path.join(dir, 'deployment_tasks.yaml'),
      '- id: x\n  type: shell\n  roles: ["*"]\n  parameters: {cmd: echo}\n',
    );
    const err = await buildPluginPackage(dir, path.join(tmp, 'bad.tar.gz')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidInputError);
    expect((err as InvalidInputError).diagnostics.filter((d) => d.severity === 'error').map((d) => d.code)).toEqual([
      'PLUGIN_TASK_VERSION_REQUIRED',
    ]);
    await expect(stat(path.join(tmp, 'bad.tar.gz'))).rejects.toThrow();
  });
});

/** Writes a .tar.gz from hand-made headers: node-tar's Pack would clean the paths we test. */
async function craft(
  file: string,
  entries: { path: string; type?: string; linkpath?: string; body?: string }[],
): Promise<void> {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const body = Buffer.from(e.body ?? '');
    const header = new Header({
      path: e.path,
      type: (e.type ?? 'File') as Header['type'],
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

describe('extractPluginPackage - refuses unsafe packages before writing anything', () => {
  it.each([
    ['absolute path', [{ path: '/etc/evil', body: 'x' }], "entry '/etc/evil' has an absolute path"],
    ['.. in a path', [{ path: 'a/../../evil', body: 'x' }], "entry 'a/../../evil' contains '..'"],
    [
      'symlink outside',
      [{ path: 'link', type: 'SymbolicLink', linkpath: '../../etc/passwd' }],
      "symlink 'link' points outside the package ('../../etc/passwd')",
    ],
    [
      'absolute symlink',
      [{ path: 'link', type: 'SymbolicLink', linkpath: '/etc/passwd' }],
      "symlink 'link' points to the absolute path '/etc/passwd'",
    ],
    [
      'hard link outside',
      [{ path: 'hard', type: 'Link', linkpath: '../outside' }],
      "hard link 'hard' points outside the package ('../outside')",
    ],
    [
      'a symlink chain that leaves the package (d/a -> .., then d/a/b -> ../x)',
      [
        { path: 'deployment_scripts/', type: 'Directory' },
        { path: 'deployment_scripts/a', type: 'SymbolicLink', linkpath: '..' },
        { path: 'deployment_scripts/a/b', type: 'SymbolicLink', linkpath: '../x' },
      ],
      "entry 'deployment_scripts/a/b' lies beneath the symlink 'deployment_scripts/a'; an entry may not be written through a link",
    ],
    [
      'a chain of links each inside, resolving outside (a -> d/.., d -> x/.., c -> a/../..)',
      [
        { path: 'l1', type: 'SymbolicLink', linkpath: 'sub/..' },
        { path: 'sub/', type: 'Directory' },
        { path: 'sub/up', type: 'SymbolicLink', linkpath: '..' },
        { path: 'l2', type: 'SymbolicLink', linkpath: 'sub/up/sub/up/..' },
      ],
      "symlink 'l2' resolves outside the package through other links ('sub/up/sub/up/..')",
    ],
    [
      'a file written through a symlinked directory',
      [
        { path: 'dir', type: 'SymbolicLink', linkpath: '.' },
        { path: 'dir/evil', body: 'x' },
      ],
      "entry 'dir/evil' lies beneath the symlink 'dir'; an entry may not be written through a link",
    ],
    [
      'links that loop',
      [
        { path: 'a', type: 'SymbolicLink', linkpath: 'b' },
        { path: 'b', type: 'SymbolicLink', linkpath: 'a' },
      ],
      "symlink 'a' resolves outside the package through other links ('b')",
    ],
  ])('%s', async (_name, entries, message) => {
    const file = path.join(tmp, 'evil.tar.gz');
    await craft(file, entries);
    const dest = path.join(tmp, 'out');
    await expect(extractPluginPackage(file, dest)).rejects.toThrow(
      `${file}: ${message}; the package was not extracted`,
    );
    await expect(stat(dest)).rejects.toThrow();
  });

  it('over the size limit', async () => {
    const file = path.join(tmp, 'big.tar.gz');
    await craft(file, [
      { path: 'a', body: 'x'.repeat(600) },
      { path: 'b', body: 'y'.repeat(600) },
    ]);
    await expect(extractPluginPackage(file, path.join(tmp, 'out'), { maxBytes: 1000 })).rejects.toThrow(
      `${file}: the package unpacks to more than 1000 bytes, the limit; the package was not extracted`,
    );
    await expect(extractPluginPackage(file, path.join(tmp, 'ok'), { maxBytes: 2000 })).resolves.toEqual(['a', 'b']);
  });

  it('keeps links that stay inside the package', async () => {
    const file = path.join(tmp, 'links.tar.gz');
    await craft(file, [
      { path: 'dir/', type: 'Directory' },
      { path: 'dir/real.txt', body: 'hello' },
      { path: 'dir/link.txt', type: 'SymbolicLink', linkpath: 'real.txt' },
    ]);
    const out = path.join(tmp, 'out');
    await extractPluginPackage(file, out);
    expect(await readFile(path.join(out, 'dir/link.txt'), 'utf8')).toBe('hello');
  });

  it('a file that is not a gzip tarball - a clear error', async () => {
    const file = path.join(tmp, 'junk.tar.gz');
    await writeFile(file, 'not a tarball');
    await expect(extractPluginPackage(file, path.join(tmp, 'out'))).rejects.toThrow(
      `${file}: not a readable .tar.gz package`,
    );
  });
});

describe('packages are streamed, never held whole', () => {
  it('readPackageEntries keeps the bytes of YAML/JSON files only; the others are counted', async () => {
    const file = path.join(tmp, 'p.tar.gz');
    await craft(file, [
      { path: 'metadata.yaml', body: 'name: p\n' },
      { path: 'deployment_scripts/', type: 'Directory' },
      { path: 'deployment_scripts/big.bin', body: 'z'.repeat(5000) },
      { path: 'deployment_scripts/data.json', body: '{"a":1}' },
    ]);
    const entries = await readPackageEntries(file);
    expect(entries.map((e) => [e.path, e.type, e.size, e.data?.toString('utf8')])).toEqual([
      ['metadata.yaml', 'file', 8, 'name: p\n'],
      ['deployment_scripts', 'dir', undefined, undefined],
      ['deployment_scripts/big.bin', 'file', 5000, undefined],
      ['deployment_scripts/data.json', 'file', 7, '{"a":1}'],
    ]);
  });

  it('extraction streams every file to disk byte for byte', async () => {
    const file = path.join(tmp, 'p.tar.gz');
    const body = 'q'.repeat(300_000);
    await craft(file, [
      { path: 'a/b.bin', body },
      { path: 'a/c.yaml', body: 'x: 1\n' },
    ]);
    const out = path.join(tmp, 'out');
    expect(await extractPluginPackage(file, out)).toEqual(['a/b.bin', 'a/c.yaml']);
    expect(await readFile(path.join(out, 'a/b.bin'), 'utf8')).toBe(body);
    expect(await readFile(path.join(out, 'a/c.yaml'), 'utf8')).toBe('x: 1\n');
  });

  it('an entry that appears twice: a clear error, and what was written is gone', async () => {
    const file = path.join(tmp, 'dup.tar.gz');
    await craft(file, [
      { path: 'a.txt', body: 'one' },
      { path: 'a.txt', body: 'two' },
    ]);
    const dest = path.join(tmp, 'out');
    await expect(extractPluginPackage(file, dest)).rejects.toThrow(
      `${file}: entry 'a.txt' appears twice or clashes with another entry; the package was not extracted`,
    );
    await expect(stat(dest)).rejects.toThrow();
  });

  it('a failure empties a destination that existed empty, and keeps the folder', async () => {
    const file = path.join(tmp, 'evil.tar.gz');
    await craft(file, [
      { path: 'ok.txt', body: 'fine' },
      { path: 'dir', type: 'SymbolicLink', linkpath: '.' },
      { path: 'dir/evil', body: 'x' },
    ]);
    const dest = path.join(tmp, 'out');
    await mkdir(dest);
    await expect(extractPluginPackage(file, dest)).rejects.toThrow("lies beneath the symlink 'dir'");
    expect(await readdir(dest)).toEqual([]);
  });
});

describe('createPluginFromTemplate', () => {
  it.each(['5.0.0', '4.0.0'] as const)('%s template - validates with no errors', async (pv) => {
    const { dir } = await createPluginFromTemplate('my_plugin', { packageVersion: pv, parent: tmp });
    const report = await validatePlugin(new NodePluginFiles(dir));
    expect(report.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect(report.valid).toBe(true);
    expect(report.packageVersion).toBe(pv);
    await buildPluginPackage(dir, path.join(tmp, `t-${pv}.tar.gz`));
  });

  it('refuses a bad name and a non-empty target', async () => {
    await expect(createPluginFromTemplate('My Plugin', { parent: tmp })).rejects.toThrow(
      `plugin name: expected a plugin name of 1 to 63 letters, digits, '_' or '-', starting with a letter or digit, got "My Plugin"`,
    );
    await expect(createPluginFromTemplate('-x', { parent: tmp })).rejects.toThrow('got "-x"');
    await expect(createPluginFromTemplate('MyPlugin', { parent: tmp })).rejects.toThrow(
      "plugin name 'MyPlugin' is not valid: use lower-case letters, digits, _ and - (e.g. my_plugin)",
    );
    await mkdir(path.join(tmp, 'taken'));
    await writeFile(path.join(tmp, 'taken', 'x'), '');
    await expect(createPluginFromTemplate('taken', { parent: tmp })).rejects.toThrow(
      `${path.join(tmp, 'taken')} already exists and is not empty`,
    );
  });

  it('build refuses a symlink in the plugin directory', async () => {
    const { dir } = await createPluginFromTemplate('linked', { parent: tmp });
    await symlink('/etc/hostname', path.join(dir, 'deployment_scripts', 'host'));
    await expect(buildPluginPackage(dir, path.join(tmp, 'l.tar.gz'))).rejects.toThrow(
      'deployment_scripts/host is a symlink; a plugin package holds regular files only (copy the target in)',
    );
  });
});
