import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from './packaging-files';

// The agent package (issue 21.3, ADR 0027) as tools/package-agent.mjs builds it: what is in it,
// that its one-file agent loads with no node_modules anywhere, and what install.sh --root and
// uninstall.sh do with it. The e2e test (agent-package.e2e.spec.ts) runs the installed agent.

interface Manifest {
  version: string;
  entry: string;
  bundleBytes: number;
  packages: Array<{ name: string; version: string; bytes: number }>;
  leftOut: string[];
  nativeHelper: { source: string; prebuilt: string | null };
}

const NODE_MAJOR = Number(process.versions.node.split('.')[0]);
/** install.sh accepts this machine's Node.js 20 only when told to (it wants a maintained LTS). */
const EOL_FLAG = NODE_MAJOR < 22 ? ['--allow-eol-node'] : [];
const FAKE_CREDS = '-----BEGIN NATS USER JWT-----\nx\n------END NATS USER JWT------\n';

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  const { NODE_PATH: _unset, ...base } = process.env;
  return spawnSync(cmd, args, { cwd, env: { ...base, ...env }, encoding: 'utf8', timeout: 60_000 });
}

/** Every file under `dir`, relative, sorted. */
function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => !e.isDirectory())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

describe('agent package - granule agent package, install.sh --root, uninstall.sh', () => {
  let tmp: string;
  let pkg: string;
  let manifest: Manifest;

  beforeAll(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'granule-agent-pkg-'));
    const built = run(process.execPath, [path.join(ROOT, 'tools/package-agent.mjs'), '--out', tmp], ROOT);
    if (built.status !== 0) throw new Error(`package-agent failed: ${built.stderr}`);
    const file = built.stdout.trim();
    expect(path.dirname(file)).toBe(tmp);
    expect(path.basename(file)).toMatch(/^granule-agent-\d+\.\d+\.\d+-linux-[a-z0-9]+\.tar\.gz$/);
    const extracted = run('tar', ['xzf', file, '-C', tmp], tmp);
    expect(extracted.status).toBe(0);
    pkg = path.join(tmp, readdirSync(tmp).find((n) => n.startsWith('granule-agent-') && !n.endsWith('.gz')) as string);
    manifest = JSON.parse(readFileSync(path.join(pkg, 'manifest.json'), 'utf8')) as Manifest;
    const mb = (n: number): string => `${(n / 1024 / 1024).toFixed(2)} MB`;
    process.stdout.write(
      `agent package: ${mb(statSync(file).size)} (.tar.gz), node-agent.js ${mb(manifest.bundleBytes)} from ${manifest.packages.length} production packages; largest: ${[
        ...manifest.packages,
      ]
        .sort((a, b) => b.bytes - a.bytes)
        .slice(0, 5)
        .map((p) => `${p.name} ${mb(p.bytes)}`)
        .join(', ')}\n`,
    );
  }, 180_000);
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('holds the bundle, the helper source, install.sh, uninstall.sh, the unit, README, VERSION and manifest - no node_modules', () => {
    const list = files(pkg);
    expect(list.filter((f) => !f.startsWith('native/prebuilt/'))).toEqual([
      'README.md',
      'VERSION',
      'app/node-agent.js',
      'app/node-agent.js.LEGAL.txt',
      'granule-agent.service',
      'install.sh',
      'manifest.json',
      'native/granule-spawn.c',
      'uninstall.sh',
    ]);
    expect(list.filter((f) => f.startsWith('native/prebuilt/'))).toEqual(
      manifest.nativeHelper.prebuilt ? [manifest.nativeHelper.prebuilt] : [],
    );
    for (const script of ['install.sh', 'uninstall.sh'])
      expect(statSync(path.join(pkg, script)).mode & 0o111).not.toBe(0);
    expect(readFileSync(path.join(pkg, 'VERSION'), 'utf8').trim()).toBe(manifest.version);
  });

  it('bundles production dependencies only: none the lock file marks dev, and nothing of the database or the build tools', () => {
    const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean; version: string }>;
    };
    const names = manifest.packages.map((p) => p.name);
    const dev = names.filter((n) => lock.packages[`node_modules/${n}`]?.dev === true);
    expect(dev).toEqual([]);
    expect(names).toEqual(
      expect.arrayContaining(['@nats-io/transport-node', '@nestjs/core', 'pino', 'class-validator']),
    );
    // The agent needs only NATS: no PostgreSQL client, no ORM; and none of the tooling.
    for (const absent of ['pg', 'typeorm', 'esbuild', 'typescript', 'jest', 'nx', '@swc/core'])
      expect(names).not.toContain(absent);
    // Optional peers absent from a production install are left out, and said so.
    expect(manifest.leftOut).toEqual(expect.arrayContaining([expect.stringMatching(/^kafkajs \(optional peer of /)]));
    expect(manifest.bundleBytes).toBe(statSync(path.join(pkg, manifest.entry)).size);
  });

  it('the bundle loads on its own: outside the repository, with no node_modules reachable, it reads its config and stops on a bad one', () => {
    for (let dir = pkg; dir !== path.dirname(dir); dir = path.dirname(dir))
      expect(existsSync(path.join(dir, 'node_modules'))).toBe(false);
    expect(path.relative(ROOT, pkg).startsWith('..')).toBe(true);
    // Proof that nothing resolves from here: a dependency of the agent is not found.
    const resolve = run(process.execPath, ['-e', "require.resolve('@nestjs/core')"], path.join(pkg, 'app'));
    expect(resolve.status).not.toBe(0);
    expect(resolve.stderr).toContain("Cannot find module '@nestjs/core'");

    const started = run(process.execPath, [path.join(pkg, 'app/node-agent.js')], tmp, {
      GRANULE_NODE_UID: 'web.1',
      GRANULE_ROOT: 'srv',
    });
    expect([started.status, started.stderr.trim()]).toEqual([
      1,
      'node-agent: invalid configuration: GRANULE_NODE_UID: must be a node uid of 1 to 63 letters, digits, \'_\' or \'-\', starting with a letter or digit (got "web.1"); GRANULE_ROOT: must be an absolute path (got "srv")',
    ]);
  });

  it('install.sh in a checkout (not a package) says to build a package, and changes nothing', () => {
    const script = path.join(ROOT, 'deploy/node-agent/install.sh');
    const r = run('bash', [script, '--root', path.join(tmp, 'never'), '--node-uid', 'web-01'], tmp);
    expect([r.status, r.stderr.trim()]).toEqual([
      1,
      `install.sh: no agent package in ${path.dirname(script)}: install.sh runs from an extracted agent package (granule agent package builds one; see deploy/node-agent/README.md)`,
    ]);
    expect(existsSync(path.join(tmp, 'never'))).toBe(false);
  });

  describe('install.sh --root', () => {
    let root: string;
    let creds: string;
    const install = (args: string[]): SpawnSyncReturns<string> =>
      run('bash', [path.join(pkg, 'install.sh'), '--root', root, '--node', process.execPath, ...args], tmp);
    beforeAll(() => {
      root = path.join(tmp, 'host');
      creds = path.join(tmp, 'web-01.creds');
      writeFileSync(creds, FAKE_CREDS, { mode: 0o644 });
    });

    /** A `node` that says it is version `v` (install.sh asks it for process.versions.node). */
    const fakeNode = (v: string): string => {
      const file = path.join(tmp, `node-${v}`);
      writeFileSync(file, `#!/bin/sh\necho ${v}\n`, { mode: 0o755 });
      return file;
    };
    const NEEDED = 'install.sh: Node.js 22 or later (a maintained LTS) is needed';

    it('Node.js 20 (past its end of life): refused naming the version and path, accepted with --allow-eol-node and a warning', () => {
      const node20 = fakeNode('20.19.1');
      const refused = install(['--node-uid', 'web-01', '--node', node20]);
      expect([refused.status, refused.stderr.trim()]).toEqual([
        1,
        `${NEEDED}, found v20.19.1 at ${node20}: install Node.js 22 or 24, or pass --allow-eol-node to run on Node.js 20 (past its end of life: no security fixes)`,
      ]);
      const accepted = install(['--node-uid', 'web-01', '--node', node20, '--allow-eol-node', '--dry-run']);
      expect([accepted.status, accepted.stderr.trim()]).toEqual([
        0,
        'warning: Node.js v20.19.1 is past its end of life (April 2026): the agent runs on it, but install Node.js 22 or 24',
      ]);
      expect(existsSync(root)).toBe(false);
    });

    it('Node.js 18 is refused even with --allow-eol-node; 22 and 24 are taken without a word', () => {
      const node18 = fakeNode('18.20.4');
      const r = install(['--node-uid', 'web-01', '--node', node18, '--allow-eol-node']);
      expect([r.status, r.stderr.trim()]).toEqual([1, `${NEEDED}, found v18.20.4 at ${node18}`]);
      for (const v of ['22.13.0', '24.11.1']) {
        const ok = install(['--node-uid', 'web-01', '--node', fakeNode(v), '--dry-run']);
        expect([ok.status, ok.stderr]).toEqual([0, '']);
        expect(ok.stdout).toContain(`(Node.js v${v} at ${path.join(tmp, `node-${v}`)})`);
      }
      expect(existsSync(root)).toBe(false);
    });

    it('bad options: exit 2 with what was expected, nothing written', () => {
      const bad = [
        [['--protect-home', 'maybe'], "install.sh: --protect-home: expected no, read-only, tmpfs or yes, got 'maybe'"],
        [['--state-dir', 'var/lib'], "install.sh: --state-dir: expected an absolute directory, got 'var/lib'"],
        [
          ['--creds', path.join(pkg, 'VERSION')],
          `install.sh: --creds: '${path.join(pkg, 'VERSION')}' is not a NATS credential (no 'BEGIN NATS USER JWT' line); make one with: granule agent enroll web-01 --out FILE`,
        ],
      ] as const;
      for (const [args, message] of bad) {
        const r = install(['--node-uid', 'web-01', ...args]);
        expect([r.status, r.stderr.trim()]).toEqual([2, message]);
      }
      expect(existsSync(root)).toBe(false);
    });

    it('installs the version with a relative current link, agent.env, the credential (0600) and the rendered unit', () => {
      const r = install([
        '--node-uid',
        'web-01',
        '--nats-url',
        'nats://10.1.0.1:4222',
        '--subject-prefix',
        'acme',
        '--creds',
        creds,
        '--protect-home',
        'read-only',
        ...EOL_FLAG,
      ]);
      expect(r.status).toBe(0);
      const v = manifest.version;
      expect(readlinkSync(path.join(root, 'opt/granule-agent/current'))).toBe(v);
      expect(files(path.join(root, 'opt/granule-agent'))).toEqual(
        expect.arrayContaining([`${v}/app/node-agent.js`, `${v}/uninstall.sh`, `${v}/native/build/granule-spawn`]),
      );
      // The helper was built here (a C compiler exists) and runs: it exits when its stdin closes.
      expect(r.stdout).toContain('task processes will be started by the native spawn helper granule-spawn (built with');
      expect(run(path.join(root, 'opt/granule-agent/current/native/build/granule-spawn'), [], tmp).status).toBe(0);

      const env = readFileSync(path.join(root, 'etc/granule/agent.env'), 'utf8');
      const active = env.split('\n').filter((l) => /^[A-Z]/.test(l));
      expect(active).toEqual([
        'GRANULE_NODE_UID=web-01',
        'GRANULE_NATS_URL=nats://10.1.0.1:4222',
        'GRANULE_SUBJECT_PREFIX=acme',
        'GRANULE_NATS_CREDS=/etc/granule/agent.creds',
        'GRANULE_ROOT=/var/lib/granule-agent',
      ]);
      // Only NATS: no Redis or database setting, not even commented out.
      expect(env).not.toMatch(/REDIS|DATABASE/);
      expect(statSync(path.join(root, 'etc/granule/agent.env')).mode & 0o777).toBe(0o600);
      expect(statSync(path.join(root, 'etc/granule/agent.creds')).mode & 0o777).toBe(0o600);
      expect(readFileSync(path.join(root, 'etc/granule/agent.creds'), 'utf8')).toBe(FAKE_CREDS);

      const unit = readFileSync(path.join(root, 'etc/systemd/system/granule-agent.service'), 'utf8');
      expect(unit).toContain(`\nExecStart=${process.execPath} /opt/granule-agent/current/app/node-agent.js\n`);
      expect(unit).toContain('\nProtectHome=read-only\n');
      expect(unit).not.toMatch(/@[A-Z_]+@/);
    });

    it('systemd-analyze verify finds nothing to say about the rendered unit', () => {
      const analyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
      if (analyze.error) {
        process.stdout.write(
          'systemd-analyze is not installed: the unit is checked statically only (agent-unit.spec.ts)\n',
        );
        return;
      }
      const r = run('systemd-analyze', ['verify', path.join(root, 'etc/systemd/system/granule-agent.service')], tmp);
      expect([r.status, r.stderr.trim()]).toEqual([0, '']);
    });

    it('installing again keeps an edited agent.env and swaps the version in place', () => {
      const envFile = path.join(root, 'etc/granule/agent.env');
      writeFileSync(envFile, 'GRANULE_NODE_UID=edited\n', { mode: 0o600 });
      mkdirSync(path.join(root, 'opt/granule-agent', manifest.version, 'stale'));
      const r = install(['--node-uid', 'web-01', ...EOL_FLAG]);
      expect(r.status).toBe(0);
      expect(r.stdout).toContain(`keeping the existing ${envFile}`);
      expect(readFileSync(envFile, 'utf8')).toBe('GRANULE_NODE_UID=edited\n');
      expect(existsSync(path.join(root, 'opt/granule-agent', manifest.version, 'stale'))).toBe(false);
      expect(readdirSync(path.join(root, 'opt/granule-agent')).sort()).toEqual(['current', manifest.version].sort());
    });

    it('uninstall.sh removes the agent and the unit and keeps /etc/granule; --purge removes that too', () => {
      const uninstall = path.join(root, 'opt/granule-agent/current/uninstall.sh');
      mkdirSync(path.join(root, 'var/lib/granule-agent/.granule'), { recursive: true });
      const r = run('bash', [uninstall, '--root', root], tmp);
      expect(r.status).toBe(0);
      expect(existsSync(path.join(root, 'opt/granule-agent'))).toBe(false);
      expect(existsSync(path.join(root, 'etc/systemd/system/granule-agent.service'))).toBe(false);
      expect(files(path.join(root, 'etc/granule'))).toEqual(['agent.creds', 'agent.env']);
      expect(r.stdout).toContain('uninstall.sh --purge removes them');

      const purge = run('bash', [path.join(pkg, 'uninstall.sh'), '--root', root, '--purge'], tmp);
      expect(purge.status).toBe(0);
      expect(existsSync(path.join(root, 'etc/granule'))).toBe(false);
      expect(existsSync(path.join(root, 'var/lib/granule-agent'))).toBe(false);
      expect(lstatSync(path.join(root, 'etc/systemd/system')).isDirectory()).toBe(true);
    });
  });

  describe('the native helper on a host without a C compiler', () => {
    /** A PATH holding only what install.sh needs besides a compiler. */
    let bin: string;
    beforeAll(() => {
      bin = path.join(tmp, 'bin-no-cc');
      mkdirSync(bin);
      const tools = [
        'bash',
        'sh',
        'dirname',
        'basename',
        'tr',
        'grep',
        'cut',
        'id',
        'uname',
        'mkdir',
        'rm',
        'cp',
        'mv',
      ];
      for (const tool of [...tools, 'ln', 'install', 'sed', 'chmod', 'head', 'cat']) {
        const found = spawnSync('bash', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
        symlinkSync(found, path.join(bin, tool));
      }
    });
    const installWithoutCc = (pkgDir: string, root: string): SpawnSyncReturns<string> =>
      run(
        'bash',
        [path.join(pkgDir, 'install.sh'), '--root', root, '--node', process.execPath, '--node-uid', 'h1', ...EOL_FLAG],
        tmp,
        { PATH: bin, CC: '' },
      );

    it("uses the package's prebuilt helper when it runs here", () => {
      if (!manifest.nativeHelper.prebuilt) return; // packaged without a compiler: nothing prebuilt to use
      const root = path.join(tmp, 'host-prebuilt');
      const r = installWithoutCc(pkg, root);
      expect(r.status).toBe(0);
      expect(r.stdout).toContain(
        `task processes will be started by the native spawn helper granule-spawn (the package's prebuilt binary for ${os.machine()})`,
      );
      const helper = path.join(root, 'opt/granule-agent/current/native/build/granule-spawn');
      expect(readFileSync(helper)).toEqual(readFileSync(path.join(pkg, manifest.nativeHelper.prebuilt)));
    });

    it('without a prebuilt one either: one line says the agent starts tasks with child_process, and no helper is installed', () => {
      const bare = path.join(tmp, 'pkg-no-prebuilt');
      cpSync(pkg, bare, { recursive: true });
      rmSync(path.join(bare, 'native/prebuilt'), { recursive: true, force: true });
      const root = path.join(tmp, 'host-plain');
      const r = installWithoutCc(bare, root);
      expect(r.status).toBe(0);
      expect(r.stdout.split('\n').filter((l) => /spawn helper/.test(l))).toEqual([
        `note: no native spawn helper (no C compiler, and no prebuilt binary for ${os.machine()} that runs here): the agent will start tasks with Node.js's child_process (same behaviour, about 1 ms more CPU per task; install gcc and run install.sh again to get it)`,
      ]);
      expect(existsSync(path.join(root, 'opt/granule-agent/current/native/build/granule-spawn'))).toBe(false);
      expect(existsSync(path.join(root, 'opt/granule-agent/current/app/node-agent.js'))).toBe(true);
    });
  });
});
