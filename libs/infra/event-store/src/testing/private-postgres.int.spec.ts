import { execFile, spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { startPrivatePostgres, type PrivatePostgres } from './private-postgres';

const run = promisify(execFile);
jest.setTimeout(60_000);

const clusters = async (): Promise<string[]> =>
  (await run('pg_lsclusters', ['--no-header'])).stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/)[1])
    .filter(Boolean);

describe('startPrivatePostgres (Debian pg_createcluster)', () => {
  const version = readdirSync('/etc/postgresql')
    .filter((v) => /^\d+$/.test(v))
    .sort((a, b) => Number(b) - Number(a))[0];
  let pg: PrivatePostgres | undefined;

  afterEach(async () => {
    await pg?.stop();
    pg = undefined;
  });

  it('drops the clusters a killed test run left (their process is gone) and keeps those of live processes', async () => {
    // A pid that no longer exists: a process that has exited.
    const gone = spawn('true');
    await new Promise((r) => gone.once('exit', r));
    const left = `granule_${gone.pid}_deadbeef`;
    const live = `granule_${process.pid}_0000cafe`;
    await run('pg_createcluster', [version, left, '--', '--auth=trust']);
    await run('pg_createcluster', [version, live, '--', '--auth=trust']);
    try {
      pg = await startPrivatePostgres();
      const names = await clusters();
      expect([names.includes(left), names.includes(live)]).toEqual([false, true]);
      // The new cluster answers on its own port and is named after this process.
      expect(names.filter((n) => n.startsWith(`granule_${process.pid}_`) && n !== live)).toHaveLength(1);
      const client = new Client({ connectionString: pg.adminUrl });
      await client.connect();
      const { rows } = await client.query<{ port: string }>('SHOW port');
      await client.end();
      expect(Number(rows[0].port)).toBe(pg.port);
    } finally {
      for (const name of [left, live]) await run('pg_dropcluster', [version, name, '--stop']).catch(() => undefined);
    }
  });
});
