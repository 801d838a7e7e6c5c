// The agent package (ADR 0027) for tests that put an agent on a "host" of their own: build it,
// extract it, install it with install.sh --root, and the settings to run the installed agent
// with when no mount namespace makes the root its `/` (agent-package.e2e.spec.ts).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './stack';

/** install.sh wants a maintained Node.js LTS (22+); this machine's Node.js 20 is accepted only when told. */
export const EOL_NODE_FLAG: string[] = Number(process.versions.node.split('.')[0]) < 22 ? ['--allow-eol-node'] : [];

/** Builds the package into `outDir` with the script `granule agent package` runs; returns the .tar.gz. */
export function buildAgentPackage(outDir: string): string {
  const r = spawnSync(process.execPath, [path.join(REPO_ROOT, 'tools/package-agent.mjs'), '--out', outDir], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`tools/package-agent.mjs failed (${r.status}): ${r.stderr}`);
  return r.stdout.trim();
}

/** Extracts the package `file` into `dir` (created); returns the package's folder. */
export function extractAgentPackage(file: string, dir: string): string {
  mkdirSync(dir, { recursive: true });
  const r = spawnSync('tar', ['xzf', file, '-C', dir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`tar xzf ${file} failed: ${r.stderr}`);
  const name = readdirSync(dir).find((n) => n.startsWith('granule-agent-') && !n.endsWith('.tar.gz'));
  if (!name) throw new Error(`${file} holds no granule-agent-<version>/ folder`);
  return path.join(dir, name);
}

/** `KEY=value` lines of an env file (comments and blanks skipped), as systemd's EnvironmentFile reads them. */
export function readEnvFile(file: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line);
    if (m) env[m[1]] = m[2];
  }
  return env;
}

export interface InstalledAgent {
  /** The private root install.sh wrote under. */
  root: string;
  version: string;
  /** What install.sh printed. */
  stdout: string;
  stderr: string;
  /** `etc/granule/agent.env` as written: paths as the host sees them once `root` is its `/`. */
  settings: Record<string, string>;
  /** The installed entry file, through the `current` link. */
  main: string;
  /** `GRANULE_ROOT` under `root` (created: systemd's StateDirectory= does that on a host). */
  stateDir: string;
  /** The agent's environment without a mount namespace: the settings with their paths under `root`, a plain PATH, `extra` last. */
  env(extra?: Record<string, string>): Record<string, string>;
}

/**
 * Runs the package's install.sh with `--root root` (no systemd, no root needed) and the Node.js
 * running the tests. Throws with install.sh's output when it fails.
 */
export function installAgentPackage(
  pkg: string,
  root: string,
  options: { nodeUid: string; natsUrl: string; subjectPrefix: string; creds?: string; args?: string[] },
): InstalledAgent {
  const args = [
    path.join(pkg, 'install.sh'),
    '--root',
    root,
    '--node',
    process.execPath,
    '--node-uid',
    options.nodeUid,
    '--nats-url',
    options.natsUrl,
    '--subject-prefix',
    options.subjectPrefix,
    ...(options.creds ? ['--creds', options.creds] : []),
    ...EOL_NODE_FLAG,
    ...(options.args ?? []),
  ];
  const r = spawnSync('bash', args, { cwd: path.dirname(pkg), encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`install.sh exited ${r.status}:\n${r.stdout}${r.stderr}`);
  const settings = readEnvFile(path.join(root, 'etc/granule/agent.env'));
  const stateDir = path.join(root, settings.GRANULE_ROOT);
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  return {
    root,
    version: readFileSync(path.join(pkg, 'VERSION'), 'utf8').trim(),
    stdout: r.stdout,
    stderr: r.stderr,
    settings,
    main: path.join(root, 'opt/granule-agent/current/app/node-agent.js'),
    stateDir,
    env: (extra = {}) => ({
      PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      ...settings,
      ...(settings.GRANULE_NATS_CREDS ? { GRANULE_NATS_CREDS: path.join(root, settings.GRANULE_NATS_CREDS) } : {}),
      GRANULE_ROOT: stateDir,
      ...extra,
    }),
  };
}
