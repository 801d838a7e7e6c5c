import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A PostgreSQL cluster of a test's own (Debian's `pg_createcluster`, trust auth, a port of its
 * own), for tests that stop the database under a running system. `halt` stops it (fast
 * shutdown: sessions are cut, committed data is kept), `resume` starts it again, `stop` drops
 * the cluster with its data.
 */
export interface PrivatePostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`: pass as `adminUrl` to `createTestDatabase`. */
  readonly adminUrl: string;
  readonly port: number;
  halt(): Promise<void>;
  resume(): Promise<void>;
  /** `halt()`, `pauseMs` of outage, `resume()`. */
  restart(pauseMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts a cluster named `granule_<pid>_<hex>` (the test process's pid). Clusters of that form
 * whose process is gone (a test run killed before its afterAll) are dropped first.
 */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const versions = existsSync('/etc/postgresql') ? readdirSync('/etc/postgresql').filter((v) => /^\d+$/.test(v)) : [];
  if (versions.length === 0)
    throw new Error(
      "startPrivatePostgres needs Debian's postgresql-common (pg_createcluster) and a PostgreSQL server: none found in /etc/postgresql",
    );
  const version = versions.sort((a, b) => Number(b) - Number(a))[0];
  await dropLeftClusters(version);
  const name = `granule_${process.pid}_${randomBytes(4).toString('hex')}`;
  const ctl = (action: string, ...args: string[]) =>
    run('pg_ctlcluster', ['--skip-systemctl-redirect', version, name, action, ...args]);
  // pg_createcluster picks a port no other cluster of the machine uses.
  await run('pg_createcluster', [version, name, '--', '--auth=trust']);
  let port: number;
  try {
    const { stdout } = await run('pg_lsclusters', ['--no-header', version, name]);
    port = Number(stdout.trim().split(/\s+/)[2]);
    if (!Number.isInteger(port))
      throw new Error(`cannot read the port of cluster ${version}/${name} from pg_lsclusters: ${stdout.trim()}`);
    await ctl('start');
  } catch (err) {
    await run('pg_dropcluster', [version, name]).catch(() => undefined);
    throw err;
  }
  const halt = async (): Promise<void> => void (await ctl('stop', '-m', 'fast'));
  const resume = async (): Promise<void> => void (await ctl('start'));
  return {
    adminUrl: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    halt,
    resume,
    async restart(pauseMs = 0) {
      await halt();
      if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
      await resume();
    },
    async stop() {
      await run('pg_dropcluster', [version, name, '--stop']);
    },
  };
}

const CLUSTER_NAME = /^granule_(\d+)_[0-9a-f]+$/;

/** Drops the private clusters of `version` whose test process no longer exists. */
async function dropLeftClusters(version: string): Promise<void> {
  const { stdout } = await run('pg_lsclusters', ['--no-header']);
  for (const line of stdout.split('\n')) {
    const [ver, name] = line.trim().split(/\s+/);
    const pid = ver === version ? CLUSTER_NAME.exec(name ?? '')?.[1] : undefined;
    if (pid !== undefined && !processExists(Number(pid)))
      await run('pg_dropcluster', [version, name, '--stop']).catch(() => undefined);
  }
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, under another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
