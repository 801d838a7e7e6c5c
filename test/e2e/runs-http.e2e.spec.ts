import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import type { RunEventEntry, RunListEntry, RunLogsReply, RunTasksReply, TaskLogRecord } from '@granule/contracts';
import { E2eStack, FIXTURES, sleep, waitUntil } from './stack';

// The runs over config-store's HTTP API (ADR 0032) on a whole stack with NATS authorization on:
// config-store forwards to the orchestrator's run queries with its own credential, and the two
// Server-Sent Event streams follow runs live, resume from Last-Event-ID, end with the run, and
// give their NATS subscriptions back when the client goes away.
const LOGS = ['--tasks', path.join(FIXTURES, 'logs/tasks.yaml'), '--nodes', path.join(FIXTURES, 'logs/nodes.yaml')];
// Only `ticks` (node 2: eight lines 0.4 s apart) and the graph's own steps.
const TICKS_ONLY = ['--skip', 'big,interleaved,no-newline,flaky,fails'];

interface SseMessage {
  id?: string;
  event?: string;
  data: string;
  /** When the client had it (ms since the epoch). */
  receivedAt: number;
}

describe('runs over HTTP: queries and live Server-Sent Event streams (whole stack)', () => {
  let stack: E2eStack;
  let work: string;
  const token = `e2e-${randomBytes(12).toString('hex')}`;
  // A second API caller ('dash'), for the bound on streams per caller.
  const dashToken = `dash-${randomBytes(12).toString('hex')}`;
  const port = 20000 + Math.floor(Math.random() * 20000);
  const monitorPort = port + 1;
  const base = `http://127.0.0.1:${port}`;
  const auth = { authorization: `Bearer ${token}` };

  beforeAll(async () => {
    stack = await E2eStack.start({
      name: 'runs_http',
      agents: ['1', '2'],
      configStoreEnv: {
        GRANULE_API_TOKENS: `e2e=${token},dash=${dashToken}`,
        GRANULE_HTTP_PORT: String(port),
        // Low bounds, above the two streams the other tests hold at once.
        GRANULE_HTTP_MAX_STREAMS: '3',
        GRANULE_HTTP_MAX_STREAMS_PER_CALLER: '2',
      },
      // The NATS monitoring endpoint: how many subscriptions config-store's connection holds.
      natsSettings: [`http: "127.0.0.1:${monitorPort}"`],
    });
    await stack.service('config-store').start();
    await waitUntil(
      () =>
        fetch(`${base}/health`).then(
          (r) => r.ok,
          () => false,
        ),
      'the config-store HTTP API',
      20_000,
    );
    work = mkdtempSync(path.join(os.tmpdir(), 'granule-e2e-runs-http-'));
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  }, 60_000);

  const getJson = async <T>(route: string): Promise<T> => {
    const res = await fetch(`${base}${route}`, { headers: auth });
    const body = (await res.json()) as T;
    if (res.status !== 200) throw new Error(`GET ${route}: ${res.status} ${JSON.stringify(body)}`);
    return body;
  };

  /** Reads a stream until the server ends it (or `stopAfter` says stop: the client goes away then). */
  async function readStream(
    route: string,
    headers: Record<string, string> = {},
    stopAfter?: (m: SseMessage) => boolean | Promise<boolean>,
  ): Promise<{ status: number; type: string | null; messages: SseMessage[] }> {
    const aborted = new AbortController();
    const res = await fetch(`${base}${route}`, { headers: { ...auth, ...headers }, signal: aborted.signal });
    const messages: SseMessage[] = [];
    if (!res.body || res.status !== 200)
      return { status: res.status, type: res.headers.get('content-type'), messages: [] };
    const decoder = new TextDecoder();
    let buffer = '';
    const reader = res.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const m: SseMessage = { data: '', receivedAt: Date.now() };
          let hasData = false;
          for (const line of frame.split('\n')) {
            if (line.startsWith(':')) continue;
            const [field, ...rest] = line.split(': ');
            const value = rest.join(': ');
            if (field === 'id') m.id = value;
            else if (field === 'event') m.event = value;
            else if (field === 'data') {
              m.data = value;
              hasData = true;
            }
          }
          if (!hasData) continue;
          messages.push(m);
          if (await stopAfter?.(m)) {
            aborted.abort();
            return { status: res.status, type: res.headers.get('content-type'), messages };
          }
        }
      }
    } catch (err) {
      if (!aborted.signal.aborted) throw err;
    }
    return { status: res.status, type: res.headers.get('content-type'), messages };
  }

  /** Subscriptions config-store's NATS connection holds now (the server's count). */
  const configStoreSubscriptions = async (): Promise<number> => {
    const connz = (await (await fetch(`http://127.0.0.1:${monitorPort}/connz?subs=1&limit=1024`)).json()) as {
      connections: { name?: string; subscriptions: number }[];
    };
    const conn = connz.connections.find((c) => c.name === 'config-store');
    if (!conn) throw new Error(`no config-store connection in ${JSON.stringify(connz.connections.map((c) => c.name))}`);
    if (typeof conn.subscriptions !== 'number') throw new Error(`connz has no count: ${JSON.stringify(conn)}`);
    return conn.subscriptions;
  };

  const deploy = async (runId: string, extra: string[]): Promise<void> => {
    const r = await stack.granule(['deploy', ...extra, '--run-id', runId], { timeoutMs: 120_000 });
    stack.assertExitedOk(r, `granule deploy ${runId}`);
  };

  const eventsOf = (messages: SseMessage[]) =>
    messages.filter((m) => m.event === undefined).map((m) => JSON.parse(m.data) as RunEventEntry & { runId: string });

  it('a run followed live: every event once in order (id = version), every log line, then the end; the queries agree', async () => {
    await deploy('http-live', [...LOGS, ...TICKS_ONLY]);
    const [events, logs] = await Promise.all([
      readStream('/runs/http-live/events/stream'),
      readStream('/runs/http-live/logs/stream'),
    ]);
    expect([events.status, events.type]).toEqual([200, 'text/event-stream; charset=utf-8']);

    const stored = await stack.events('http-live');
    const streamed = eventsOf(events.messages);
    expect(streamed.map((e) => [e.version, e.event.type])).toEqual(stored.map((e) => [e.version, e.type]));
    expect(events.messages.slice(0, -1).map((m) => m.id)).toEqual(stored.map((e) => String(e.version)));
    expect(streamed.every((e) => e.runId === 'http-live')).toBe(true);
    expect(events.messages.at(-1)).toMatchObject({ event: 'end', data: '{"runId":"http-live","phase":"succeeded"}' });
    // Live, not read back at the end: the first task line came before the run's last event was recorded.
    const ended = stored.at(-1)?.at.getTime() ?? 0;
    const tick1 = logs.messages.find((m) => m.data.includes('tick 1'));
    expect(tick1?.receivedAt).toBeLessThan(ended);

    const records = logs.messages.filter((m) => m.event === undefined).map((m) => JSON.parse(m.data) as TaskLogRecord);
    expect(logs.messages.slice(0, -1).map((m) => m.id)).toEqual(records.map((r) => r.id));
    expect(logs.messages.at(-1)).toMatchObject({ event: 'end', data: '{"runId":"http-live"}' });
    expect(records.map((r) => [r.key, r.stream, r.data]).filter(([k]) => k === 'ticks@2')).toEqual(
      [1, 2, 3, 4, 5, 6, 7, 8].map((i) => ['ticks@2', 'stdout', `tick ${i}\n`]),
    );
    const ids = records.map((r) => BigInt(r.id));
    expect(ids.every((id, i) => i === 0 || id > ids[i - 1])).toBe(true);

    // The plain queries answer the same.
    const page = await getJson<RunLogsReply>('/runs/http-live/logs');
    expect(page.records.map((r) => r.id)).toEqual(records.map((r) => r.id));
    expect(page).toMatchObject({ more: false, ended: true, runIds: ['http-live'] });
    const listed = await getJson<RunEventEntry[]>('/runs/http-live/events?after=2');
    expect(listed.map((e) => e.version)).toEqual(stored.slice(2).map((e) => e.version));
    expect(await getJson('/runs/http-live')).toMatchObject({ runId: 'http-live', phase: 'succeeded' });
    const tasks = await getJson<RunTasksReply>('/runs/http-live/tasks?node=2');
    expect(tasks.tasks.map((t) => [t.key, t.status])).toContainEqual(['ticks@2', 'succeeded']);
    expect(tasks.tasks.every((t) => t.node === '2')).toBe(true);
    const runs = await getJson<RunListEntry[]>('/runs?status=succeeded');
    expect(runs.map((r) => r.runId)).toContain('http-live');
    // Times as runs list takes them: a duration back from now, or a date.
    expect((await getJson<RunListEntry[]>('/runs?since=2h')).map((r) => r.runId)).toContain('http-live');
    expect(await getJson<RunListEntry[]>('/runs?until=2h')).toEqual([]);
  }, 120_000);

  it('Last-Event-ID resumes after that event or record: the rest once, no gap, no repeat', async () => {
    const all = (await readStream('/runs/http-live/events/stream')).messages;
    const at = Math.floor(all.length / 2);
    const resumed = await readStream('/runs/http-live/events/stream', { 'last-event-id': all[at - 1].id as string });
    expect(resumed.messages.map((m) => [m.id, m.event, m.data])).toEqual(
      all.slice(at).map((m) => [m.id, m.event, m.data]),
    );
    const byQuery = await readStream(`/runs/http-live/events/stream?after=${all[at - 1].id}`);
    expect(byQuery.messages.map((m) => m.id)).toEqual(all.slice(at).map((m) => m.id));

    const logs = (await readStream('/runs/http-live/logs/stream?node=2')).messages;
    expect(logs.length).toBeGreaterThan(4);
    const rest = await readStream('/runs/http-live/logs/stream?node=2', { 'last-event-id': logs[2].id as string });
    expect(rest.messages.map((m) => [m.id, m.data])).toEqual(logs.slice(3).map((m) => [m.id, m.data]));
  }, 60_000);

  it('a run stopped and resumed - the live stream ends at the stop; its last id follows the resumed run to the end', async () => {
    await deploy('http-resume', [...LOGS, ...TICKS_ONLY]);
    const live = readStream('/runs/http-resume/events/stream');
    await stack.waitForEvent('http-resume', 'TaskStarted', (e) => e.data.key === 'ticks@2');
    stack.assertExitedOk(await stack.granule(['stop', 'http-resume']), 'granule stop http-resume');
    const first = (await live).messages;
    expect(first.at(-1)).toMatchObject({ event: 'end', data: '{"runId":"http-resume","phase":"stopped"}' });

    stack.assertExitedOk(await stack.granule(['resume', 'http-resume']), 'granule resume http-resume');
    await stack.waitForEvent('http-resume', 'DeploymentResumed');
    const rest = (await readStream('/runs/http-resume/events/stream', { 'last-event-id': first.at(-2)?.id ?? '' }))
      .messages;
    expect(rest.at(-1)).toMatchObject({ event: 'end', data: '{"runId":"http-resume","phase":"succeeded"}' });
    const stored = (await stack.events('http-resume')).map((e) => String(e.version));
    expect([...first.slice(0, -1), ...rest.slice(0, -1)].map((m) => m.id)).toEqual(stored);
    // Read from the start afterwards: through the stop, to the end.
    const whole = (await readStream('/runs/http-resume/events/stream')).messages;
    expect(whole.slice(0, -1).map((m) => m.id)).toEqual(stored);
    expect(eventsOf(whole).map((e) => e.event.type)).toContain('DeploymentStopped');
  }, 90_000);

  it('refusals: no token 401, an unknown run 404 RUN_UNKNOWN, a bad parameter 400 naming it, before any stream', async () => {
    for (const route of ['/runs', '/runs/http-live/events/stream', '/runs/http-live/logs/stream']) {
      const res = await fetch(`${base}${route}`);
      expect([route, res.status, ((await res.json()) as { error: { code: string } }).error.code]).toEqual([
        route,
        401,
        'UNAUTHORIZED',
      ]);
    }
    for (const route of ['/runs/nope', '/runs/nope/events', '/runs/nope/events/stream', '/runs/nope/logs/stream']) {
      const res = await fetch(`${base}${route}`, { headers: auth });
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect([route, res.status, res.headers.get('content-type'), body.error.code]).toEqual([
        route,
        404,
        'application/json; charset=utf-8',
        'RUN_UNKNOWN',
      ]);
    }
    const bad = await fetch(`${base}/runs?status=sleeping`, { headers: auth });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/^status: expected requested/);
    const past = await fetch(`${base}/runs/http-live/events/stream`, { headers: { ...auth, 'last-event-id': '999' } });
    expect(past.status).toBe(400);
    expect(((await past.json()) as { error: { message: string } }).error.message).toMatch(
      /^Last-Event-ID: run http-live has \d+ events, got 999$/,
    );
  }, 30_000);

  it('a client that goes away mid-run - config-store drops the stream and its NATS subscriptions', async () => {
    const before = await configStoreSubscriptions();
    await deploy('http-gone', [...LOGS, ...TICKS_ONLY]);
    for (const route of ['/runs/http-gone/events/stream', '/runs/http-gone/logs/stream']) {
      let during = 0;
      // The first message, the server's count while the stream is open, then the client goes away.
      const { messages } = await readStream(route, {}, async () => {
        during = await configStoreSubscriptions();
        return true;
      });
      expect([route, messages.length]).toEqual([route, 1]);
      expect([route, during > before]).toEqual([route, true]);
      await waitUntil(
        async () => (await configStoreSubscriptions()) === before,
        `config-store's subscriptions back to ${before} after ${route} closed`,
        10_000,
      );
    }
    // The run itself goes on to its end.
    await stack.waitForEvent('http-gone', 'DeploymentSucceeded');
    expect(await configStoreSubscriptions()).toBe(before);
  }, 90_000);

  it('a strategy run: its phase runs are followed where they start (ids version.version), resumable inside a phase', async () => {
    const nodes = path.join(work, 'nodes.yaml');
    writeFileSync(nodes, "nodes:\n  - {uid: '1', roles: [a]}\n  - {uid: '2', roles: [a]}\n");
    const strategy = path.join(work, 'strategy.yaml');
    writeFileSync(
      strategy,
      [
        'groups:',
        '  - {name: first, critical: true, depends_on: [], selectors: [{node_names: ["1"]}]}',
        '  - {name: second, critical: true, depends_on: [first], selectors: [{node_names: ["2"]}]}',
        '',
      ].join('\n'),
    );
    await deploy('http-strategy', [
      '--tasks',
      path.join(FIXTURES, 'strategy'),
      '--nodes',
      nodes,
      '--strategy',
      strategy,
    ]);
    const all = (await readStream('/runs/http-strategy/events/stream')).messages;
    expect(all.at(-1)).toMatchObject({ event: 'end', data: '{"runId":"http-strategy","phase":"succeeded"}' });

    // What the event log holds, in the order `granule watch` prints it.
    const expected: [string, string, string][] = [];
    const walk = async (runId: string, above: number[]): Promise<void> => {
      for (const e of await stack.events(runId)) {
        expected.push([[...above, e.version].join('.'), runId, e.type]);
        if (e.type === 'StrategyPhaseStarted')
          await walk((e.data as { childRunId: string }).childRunId, [...above, e.version]);
      }
    };
    await walk('http-strategy', []);
    const streamed = eventsOf(all);
    expect(streamed.map((e, i) => [all[i].id, e.runId, e.event.type])).toEqual(expected);
    const phaseRuns = [...new Set(streamed.map((e) => e.runId).filter((r) => r !== 'http-strategy'))];
    const summary = await getJson<{ strategy?: { phaseRuns: string[] } }>('/runs/http-strategy');
    expect(phaseRuns.length).toBeGreaterThan(1);
    expect(phaseRuns).toEqual(summary.strategy?.phaseRuns);

    // Resumed from the middle of a phase run: the rest of it, then the strategy's own events after it.
    const inPhase = all.findIndex((m, i) => i > 0 && m.id?.includes('.') && all[i + 1]?.id?.includes('.'));
    expect(inPhase).toBeGreaterThan(0);
    const resumed = await readStream('/runs/http-strategy/events/stream', {
      'last-event-id': all[inPhase].id as string,
    });
    expect(resumed.messages.map((m) => m.id ?? m.event)).toEqual(all.slice(inPhase + 1).map((m) => m.id ?? m.event));

    // Its logs stream reads every phase run's logs, and ends.
    const logs = await readStream('/runs/http-strategy/logs/stream');
    expect(logs.messages.at(-1)).toMatchObject({ event: 'end', data: '{"runId":"http-strategy"}' });
    const page = await getJson<RunLogsReply>('/runs/http-strategy/logs');
    expect(page.runIds).toEqual(phaseRuns);
    expect(logs.messages.slice(0, -1).map((m) => m.id)).toEqual(page.records.map((r) => r.id));
  }, 180_000);

  it('streams are bounded: over the share of a caller or the total - 429 TOO_MANY_STREAMS with Retry-After; a closed stream frees its slot', async () => {
    const nodes = path.join(work, 'limits-nodes.yaml');
    writeFileSync(nodes, "nodes:\n  - {uid: '1', roles: [a]}\n");
    // The run's steps wait while this file exists (fixtures/locks): its streams stay open.
    mkdirSync(path.join(stack.dir, 'hold'), { recursive: true });
    const hold = path.join(stack.dir, 'hold', 'http-limits');
    writeFileSync(hold, '');
    const held: AbortController[] = [];
    const open = async (caller: string): Promise<{ status: number; retryAfter: string | null; body?: unknown }> => {
      const aborted = new AbortController();
      const res = await fetch(`${base}/runs/http-limits/events/stream`, {
        headers: { authorization: `Bearer ${caller === 'dash' ? dashToken : token}` },
        signal: aborted.signal,
      });
      if (res.status === 200) {
        held.push(aborted);
        return { status: 200, retryAfter: null };
      }
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
    };
    const refusal = (message: string) => ({
      status: 429,
      retryAfter: '5',
      body: { error: { code: 'TOO_MANY_STREAMS', message } },
    });
    try {
      await deploy('http-limits', ['--tasks', path.join(FIXTURES, 'locks/tasks.yaml'), '--nodes', nodes]);
      expect([await open('e2e'), await open('e2e')].map((r) => r.status)).toEqual([200, 200]);
      expect(await open('e2e')).toEqual(
        refusal(
          "caller 'e2e' has 2 streams open, the most one caller may (GRANULE_HTTP_MAX_STREAMS_PER_CALLER=2): close one, or try again in 5 s",
        ),
      );
      // Another caller still gets one, up to the total.
      expect((await open('dash')).status).toBe(200);
      expect(await open('dash')).toEqual(
        refusal('3 streams are open, the most config-store serves (GRANULE_HTTP_MAX_STREAMS=3): try again in 5 s'),
      );
      // A client that goes away gives its slot back.
      held[0].abort();
      await waitUntil(
        async () => (await open('dash')).status === 200,
        "a stream for 'dash' once an 'e2e' stream closed",
        10_000,
      );
    } finally {
      for (const aborted of held) aborted.abort();
      rmSync(hold, { force: true });
    }
    await stack.waitForEvent('http-limits', 'DeploymentSucceeded');
  }, 90_000);

  it('config-store stopped (SIGTERM) with a stream open - the stream ends at once, the service exits; after a restart the last id goes on', async () => {
    const nodes = path.join(work, 'held-nodes.yaml');
    writeFileSync(nodes, "nodes:\n  - {uid: '1', roles: [a]}\n");
    // The run's steps wait while this file exists (fixtures/locks).
    mkdirSync(path.join(stack.dir, 'hold'), { recursive: true });
    const hold = path.join(stack.dir, 'hold', 'http-held');
    writeFileSync(hold, '');
    await deploy('http-held', ['--tasks', path.join(FIXTURES, 'locks/tasks.yaml'), '--nodes', nodes]);
    const live = readStream('/runs/http-held/events/stream');
    await stack.waitForEvent('http-held', 'TaskDispatched');
    await sleep(1500);

    const configStore = stack.service('config-store');
    const since = Date.now();
    await configStore.kill('SIGTERM', 15_000);
    expect(Date.now() - since).toBeLessThan(5000);
    const before = (await live).messages;
    expect(before.length).toBeGreaterThan(0);
    expect(before.some((m) => m.event !== undefined)).toBe(false);

    await configStore.start();
    await waitUntil(
      () =>
        fetch(`${base}/health`).then(
          (r) => r.ok,
          () => false,
        ),
      'the config-store HTTP API again',
      20_000,
    );
    rmSync(hold);
    const after = (await readStream('/runs/http-held/events/stream', { 'last-event-id': before.at(-1)?.id ?? '' }))
      .messages;
    expect(after.at(-1)).toMatchObject({ event: 'end', data: '{"runId":"http-held","phase":"succeeded"}' });
    const stored = (await stack.events('http-held')).map((e) => String(e.version));
    expect([...before, ...after.slice(0, -1)].map((m) => m.id)).toEqual(stored);
  }, 120_000);
});
