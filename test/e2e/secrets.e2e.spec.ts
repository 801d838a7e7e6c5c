import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { executionSubjects } from '@granule/contracts';
import { generateSecretsKeyPair } from '@granule/secrets';
import { E2eStack, type CliResult } from './stack';

// Issue 20.6 and its test in 20.7: a secret marked in a task (by name or by its sensitive list),
// in CLUSTER.yaml settings or in an environment's settings reaches the one agent that runs the
// task, and nothing else: not the event log, the plans table, the config tables, a service's
// log, any NATS message but that dispatch, or what the CLI prints. The task gets the value (it
// writes it to a file); its own output that echoes it is masked.

/** Random values no other data contains, each of a kind the rule must catch. */
const SECRET = {
  dbPassword: `pw-${randomBytes(9).toString('hex')}`, // env DB_PASSWORD: by name
  urlToken: `tok-${randomBytes(9).toString('hex')}`, // env SERVICE_URL: by the task's sensitive list
  fileData: `data-${randomBytes(9).toString('hex')}`, // upload_file data: by the sensitive list
  clusterPassword: `cl-${randomBytes(9).toString('hex')}`, // CLUSTER.yaml setting {value, type: password}
  envPassword: `env-${randomBytes(9).toString('hex')}`, // env create --setting admin.password=...
  envToken: `vt-${randomBytes(9).toString('hex')}`, // env set --setting vault.token=...
};
const ALL = Object.values(SECRET);

/** The value as it may appear: in clear, or base64 at any alignment (JetStream's API encodes message data so). */
function forms(secret: string): string[] {
  const out = [secret];
  for (let k = 0; k < 3; k++) {
    const b64 = Buffer.concat([Buffer.alloc(k), Buffer.from(secret)]).toString('base64');
    out.push(b64.slice(4, -4));
  }
  return out;
}
const FORMS = ALL.flatMap((s) => forms(s).map((f) => ({ secret: s, form: f })));
const leaksIn = (text: string): string[] => [
  ...new Set(FORMS.filter((f) => text.includes(f.form)).map((f) => f.secret)),
];

const tasksYaml = (): string =>
  [
    '- id: use-secret',
    '  type: shell',
    '  version: 2.0.0',
    '  roles: [controller]',
    '  requires: [deploy_start]',
    '  required_for: [deploy_end]',
    '  sensitive: [SERVICE_URL]',
    '  parameters:',
    '    cmd: >-',
    '      printf "%s" "$DB_PASSWORD" > "$GRANULE_ROOT/db-password.$GRANULE_RUN_ID";',
    '      echo "password is $DB_PASSWORD and url is $SERVICE_URL";',
    '      echo "$DB_PASSWORD" | rev | rev >&2',
    `    env: {DB_PASSWORD: ${SECRET.dbPassword}, SERVICE_URL: "https://svc.example/?t=${SECRET.urlToken}", MODE: plain}`,
    '    timeout: 60',
    '    retries: 0',
    '- id: upload-secret',
    '  type: upload_file',
    '  version: 2.0.0',
    '  roles: [controller]',
    '  requires: [use-secret]',
    '  required_for: [deploy_end]',
    '  sensitive: [data]',
    '  parameters:',
    `    data: "token=${SECRET.fileData}\\n"`,
    '    path: state/app.secret',
    '- id: plain',
    '  type: shell',
    '  version: 2.0.0',
    '  roles: [compute]',
    '  requires: [deploy_start]',
    '  required_for: [deploy_end]',
    '  parameters: {cmd: echo nothing secret here, timeout: 60, retries: 0}',
    '',
  ].join('\n');

/** Every row of every table of the stack's database, plans ungzipped: what a reader of the database sees. */
async function databaseText(stack: E2eStack): Promise<string> {
  const tables: { table_name: string }[] = await stack.dataSource.query(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`,
  );
  const parts: string[] = [];
  for (const { table_name } of tables) {
    const rows: Record<string, unknown>[] = await stack.dataSource.query(`SELECT * FROM "${table_name}"`);
    for (const row of rows)
      for (const value of Object.values(row))
        parts.push(Buffer.isBuffer(value) ? gunzipSync(value).toString('utf8') : JSON.stringify(value));
  }
  return parts.join('\n');
}

/** Every file under `dir`, as text. */
function filesText(dir: string): string {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = path.join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(readFileSync(p, 'latin1'));
    }
  };
  walk(dir);
  return out.join('\n');
}

interface Captured {
  subject: string;
  reply?: string;
  data: string;
}

describe('secrets reach only the agent that runs the task (whole stack)', () => {
  const keys = generateSecretsKeyPair();
  let stack: E2eStack;
  let tap: NatsConnection;
  let sub: Subscription;
  const captured: Captured[] = [];
  const cliOutputs: { what: string; text: string }[] = [];
  let files: { tasks: string; nodes: string; cluster: string; release: string };

  const cli = async (args: string[]): Promise<CliResult> => {
    const r = await stack.granule(args, { timeoutMs: 180_000 });
    cliOutputs.push({ what: `granule ${args.join(' ')}`, text: `${r.stdout}\n${r.stderr}` });
    stack.assertExitedOk(r, `granule ${args.join(' ')}`);
    return r;
  };

  beforeAll(async () => {
    stack = await E2eStack.start({
      name: 'secrets',
      agents: ['1', '2'],
      orchestratorEnv: { GRANULE_SECRETS_KEY: keys.secretKey },
      configStoreEnv: { GRANULE_SECRETS_PUBLIC_KEY: keys.publicKey },
    });
    await stack.service('config-store').start();
    // Every message on the server, from here on: the secrets are random, so any message that
    // holds one is this stack's.
    tap = await stack.natsConnection();
    sub = tap.subscribe('>', {
      callback: (_err, msg: Msg) => {
        const data = Buffer.from(msg.data).toString('latin1');
        if (FORMS.some((f) => data.includes(f.form)) || msg.subject.startsWith(stack.prefix))
          captured.push({ subject: msg.subject, ...(msg.reply ? { reply: msg.reply } : {}), data });
      },
    });
    await tap.flush();

    const dir = path.join(stack.dir, 'inputs');
    mkdirSync(path.join(dir, 'release/graphs'), { recursive: true });
    files = {
      tasks: path.join(dir, 'tasks.yaml'),
      nodes: path.join(dir, 'nodes.yaml'),
      cluster: path.join(dir, 'cluster.yaml'),
      release: path.join(dir, 'release'),
    };
    writeFileSync(files.tasks, tasksYaml());
    writeFileSync(files.nodes, "nodes:\n  - {uid: '1', roles: [controller]}\n  - {uid: '2', roles: [compute]}\n");
    writeFileSync(
      files.cluster,
      `status: new\nsettings:\n  access:\n    password: {value: ${SECRET.clusterPassword}, type: password, label: Admin}\n`,
    );
    writeFileSync(
      path.join(files.release, 'metadata.yaml'),
      [
        'name: secret-release',
        'title: Secret release',
        "version: '1.0.0'",
        "package_version: '5.0.0'",
        'description: A release whose tasks hold secrets',
        "licenses: ['Apache License Version 2.0']",
        "authors: ['Granule']",
        "homepage: 'https://example.com/granule/secret-release'",
        'releases:',
        '  - release_name: secret-release',
        '    description: Release with secrets',
        '    operating_system: debian',
        "    version: '1.0.0'",
        '    is_release: true',
        '    graphs:',
        '      - type: default',
        '        tasks_path: graphs/default.yaml',
        '',
      ].join('\n'),
    );
    writeFileSync(path.join(files.release, 'graphs/default.yaml'), tasksYaml());
  }, 120_000);

  afterAll(async () => {
    sub?.unsubscribe();
    await stack?.stop();
  }, 60_000);

  it('inline deploy - the CLI seals with the key config-store gives; the task gets the values, its output masks them', async () => {
    const run = await cli([
      'deploy',
      '--tasks',
      files.tasks,
      '--nodes',
      files.nodes,
      '--cluster',
      files.cluster,
      '--run-id',
      'inline-1',
      '--watch',
      '-o',
      'json',
    ]);
    expect(JSON.parse(run.stdout)).toMatchObject({ phase: 'succeeded' });
    expect(readFileSync(path.join(stack.agentRoot('1'), 'db-password.inline-1'), 'utf8')).toBe(SECRET.dbPassword);
    expect(readFileSync(path.join(stack.agentRoot('1'), 'state/app.secret'), 'utf8')).toBe(
      `token=${SECRET.fileData}\n`,
    );
    const succeeded = (await stack.events('inline-1')).find(
      (e) => e.type === 'TaskSucceeded' && e.data.key === 'use-secret@1',
    );
    expect(succeeded?.data.outputTail).toBe('password is *** and url is ***\n***\n');
  }, 200_000);

  it('environment deploy - install, settings and deploy through config-store, sealed on the way', async () => {
    await cli(['release', 'install', files.release]);
    await cli(['env', 'create', 'vault', '--setting', `admin.password=${SECRET.envPassword}`]);
    await cli(['env', 'set', 'vault', '--setting', `vault.token=${SECRET.envToken}`]);
    await cli(['node', 'add', '1', '--hostname', 'host-1', '--roles', 'controller', '--env', 'vault']);
    await cli(['node', 'add', '2', '--hostname', 'host-2', '--roles', 'compute', '--env', 'vault']);
    const run = await cli(['deploy', '--env', 'vault', '--run-id', 'env-1', '--watch', '-o', 'json']);
    expect(JSON.parse(run.stdout)).toMatchObject({ phase: 'succeeded' });
    expect(readFileSync(path.join(stack.agentRoot('1'), 'db-password.env-1'), 'utf8')).toBe(SECRET.dbPassword);

    // What an operator reads back shows *** where a secret is.
    const shown = JSON.parse((await cli(['env', 'show', 'vault', '-o', 'json'])).stdout) as {
      settings: Record<string, Record<string, unknown>>;
    };
    expect(shown.settings).toEqual({ admin: { password: '***' }, vault: { token: '***' } });
    const graph = JSON.parse((await cli(['graph', '--run', 'env-1', '-o', 'json'])).stdout) as {
      task: string;
      parameters: { env?: Record<string, unknown>; data?: unknown };
    }[];
    expect(graph.find((i) => i.task === 'use-secret')?.parameters.env).toEqual({
      DB_PASSWORD: '***',
      SERVICE_URL: '***',
      MODE: 'plain',
    });
    expect(graph.find((i) => i.task === 'upload-secret')?.parameters.data).toBe('***');
  }, 300_000);

  it('the same reads of both runs, and the offline plan, show no secret', async () => {
    for (const runId of ['inline-1', 'env-1']) {
      await cli(['runs', 'show', runId, '-o', 'json']);
      await cli(['runs', 'events', runId, '-o', 'json']);
      await cli(['runs', 'events', runId]);
      await cli(['graph', '--run', runId, '-o', 'json']);
      // The run's progress and its tasks' output, as an operator follows them.
      await cli(['watch', runId]);
      await cli(['watch', runId, '-o', 'json']);
      await cli(['logs', runId]);
      await cli(['logs', runId, '-o', 'json']);
      await cli(['logs', runId, '--follow']);
    }
    expect(cliOutputs.find((o) => o.what === 'granule logs inline-1')?.text).toContain(
      'password is *** and url is ***',
    );
    const plan = await cli(['plan', '--tasks', files.tasks, '--nodes', files.nodes, '-o', 'json']);
    expect(plan.stdout).toContain('"DB_PASSWORD":"***"');
    await cli(['plan', '--tasks', files.tasks, '--nodes', files.nodes, '-o', 'yaml']);
    await cli(['release', 'show', 'secret-release', '-o', 'json']);
    await cli(['tasks', 'download', '--release', 'secret-release', '--dir', path.join(stack.dir, 'download')]);
    expect(cliOutputs.filter((o) => leaksIn(o.text).length > 0).map((o) => [o.what, leaksIn(o.text).length])).toEqual(
      [],
    );
  }, 200_000);

  it("no secret in the database (events, plans, config tables), a service log or the agents' stored state", async () => {
    const db = await databaseText(stack);
    expect(db).toContain('$sealed');
    expect(db).toContain('password is *** and url is ***');
    expect(leaksIn(db)).toEqual([]);
    expect(leaksIn(filesText(path.join(stack.dir, 'logs')))).toEqual([]);
    for (const uid of ['1', '2'])
      expect([uid, leaksIn(filesText(path.join(stack.agentRoot(uid), '.granule')))]).toEqual([uid, []]);
    // The file downloaded by tasks download holds the sealed form, which uploads again as it is.
    const downloaded = readFileSync(path.join(stack.dir, 'download/deployment_tasks.yaml'), 'utf8');
    expect(downloaded).toContain('$sealed');
  });

  it('on NATS, only the dispatches to node 1 carry a secret, and only the ones the task needs', async () => {
    await tap.flush();
    const dispatchStream = executionSubjects(stack.prefix).dispatch.stream;
    const isDispatchTo1 = (m: Captured): boolean =>
      m.subject === `${stack.prefix}.dispatch.1` || (m.reply ?? '').startsWith(`$JS.ACK.${dispatchStream}.agent-1.`);
    const carrying = captured.filter((m) => leaksIn(m.data).length > 0);
    // The tap saw the stack's traffic: both runs' dispatches, results and output went by.
    expect(captured.filter((m) => m.subject.startsWith(`${stack.prefix}.result.`)).length).toBeGreaterThan(4);
    expect(carrying.filter(isDispatchTo1).length).toBeGreaterThan(0);
    expect(carrying.filter((m) => !isDispatchTo1(m)).map((m) => m.subject)).toEqual([]);
    // What each dispatch carried: the values of its own task, with where they are for the agent to
    // mask. (The tap sees each dispatch twice: published, and delivered to the agent with an ack subject.)
    const published = carrying
      .filter((m) => m.subject === `${stack.prefix}.dispatch.1` && !m.reply?.startsWith('$JS.ACK.'))
      .map((m) => JSON.parse(m.data) as { task: string; secretPaths?: unknown[] });
    expect(published.map((d) => [d.task, d.secretPaths]).sort()).toEqual(
      [
        ['upload-secret', [['data']]],
        ['upload-secret', [['data']]],
        [
          'use-secret',
          [
            ['env', 'DB_PASSWORD'],
            ['env', 'SERVICE_URL'],
          ],
        ],
        [
          'use-secret',
          [
            ['env', 'DB_PASSWORD'],
            ['env', 'SERVICE_URL'],
          ],
        ],
      ].sort(),
    );
    for (const m of carrying.filter(isDispatchTo1))
      expect(leaksIn(m.data).sort()).not.toContain(SECRET.clusterPassword);
  });
});
