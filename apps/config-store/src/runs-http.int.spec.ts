import { randomBytes } from 'node:crypto';
import type { TestDatabase } from '@granule/event-store';
import type { ConfigStoreRuntime } from './config-store.runtime';
import { startTestConfigStore } from './testing/test-config-store';

const TOKEN = 'runs-http-test-token-0123456789';

interface OpenApi {
  paths: Record<
    string,
    Record<
      string,
      {
        tags?: string[];
        security?: unknown[];
        parameters?: { name: string; in: string }[];
        responses: Record<string, { content?: Record<string, unknown> }>;
      }
    >
  >;
  components: { securitySchemes?: Record<string, { scheme?: string }>; schemas?: Record<string, unknown> };
}

// The runs routes of the HTTP API (ADR 0032) on a config-store with no orchestrator on its subject
// prefix: the token guard, parameter checks and the OpenAPI document. Following real runs is
// test/e2e/runs-http.e2e.spec.ts.
describe('config-store HTTP runs API - token, parameters, OpenAPI document (real PostgreSQL and NATS)', () => {
  let db: TestDatabase;
  let runtime: ConfigStoreRuntime;
  let base: string;
  const prefix = `test.${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    ({ db, runtime, base } = await startTestConfigStore('config_runs_http', { prefix, http: { token: TOKEN } }));
  }, 30_000);

  afterAll(async () => {
    await runtime?.stop();
    await db?.drop();
  });

  const get = (route: string, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(`${base}${route}`, { headers });
  const withToken = (extra: Record<string, string> = {}): Record<string, string> => ({
    authorization: `Bearer ${TOKEN}`,
    ...extra,
  });

  it.each([
    '/runs',
    '/runs/r1',
    '/runs/r1/tasks',
    '/runs/r1/events',
    '/runs/r1/logs',
    '/runs/r1/events/stream',
    '/runs/r1/logs/stream',
  ])(
    'GET %s without the token or with a wrong one - 401 UNAUTHORIZED, never reaches the orchestrators',
    async (route) => {
      const refused: Record<string, string>[] = [
        {},
        { authorization: 'Bearer not-the-token-0123456789' },
        { 'x-granule-token': 'nope' },
      ];
      for (const headers of refused) {
        const res = await get(route, headers);
        expect(res.status).toBe(401);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED');
      }
    },
  );

  it('with the token and no orchestrator on NATS - 503 ORCHESTRATOR_UNAVAILABLE, the stream is not started', async () => {
    for (const route of ['/runs', '/runs/r1', '/runs/r1/events/stream', '/runs/r1/logs/stream']) {
      const res = await get(route, withToken());
      expect([route, res.status]).toEqual([route, 503]);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('ORCHESTRATOR_UNAVAILABLE');
      expect(body.error.message).toContain(`${prefix}.runs.`);
    }
  });

  it('a bad query parameter or Last-Event-ID - 400 naming it, before any orchestrator is asked', async () => {
    const cases: [string, Record<string, string>, string][] = [
      ['/runs?limit=ten', {}, 'limit: expected a whole number from 1, got "ten"'],
      ['/runs?limit=0', {}, 'limit: expected a whole number from 1, got "0"'],
      ['/runs?limit=1001', {}, 'limit: expected a whole number from 1 to 1000, got 1001'],
      ['/runs?colour=red', {}, "colour: unknown query parameter 'colour' (expected env, status, since, until, limit)"],
      ['/runs?env=a&env=b', {}, 'env: expected one value, got several'],
      ['/runs/r1/logs?attempt=0', {}, 'attempt: expected a whole number from 1, got "0"'],
      ['/runs/r1/logs?stderrOnly=maybe', {}, 'stderrOnly: expected true or false, got "maybe"'],
      ['/runs/r1/logs?after=x1', {}, 'after: expected a log record id (digits), got "x1"'],
      [
        '/runs/r1/events/stream',
        { 'last-event-id': '7.x' },
        'Last-Event-ID: expected an event id such as 12 or 7.3 (versions, dot-separated), got "7.x"',
      ],
      [
        '/runs/r1/logs/stream',
        { 'last-event-id': 'abc' },
        'Last-Event-ID: expected a log record id (digits), got "abc"',
      ],
      ['/runs/r1/events/stream?follow=1', {}, "follow: unknown query parameter 'follow' (expected after)"],
      ['/runs/r1/events?expiredCommands=maybe', {}, 'expiredCommands: expected true or false, got "maybe"'],
      [
        '/runs/r1/events?expiredCommands=true&after=3',
        {},
        'expiredCommands: expected no after with it (an expired command has no version of the run), got both',
      ],
    ];
    for (const [route, headers, message] of cases) {
      const res = await get(route, withToken(headers));
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect([route, res.status, body.error.code, body.error.message]).toEqual([route, 400, 'INVALID_INPUT', message]);
    }
  });

  it('GET /openapi.json - public, generated from the controllers: the runs paths with their parameters and responses', async () => {
    const res = await get('/openapi.json');
    expect(res.status).toBe(200);
    const doc = (await res.json()) as OpenApi & { openapi: string };
    expect(doc.openapi).toMatch(/^3\./);
    const runs = Object.keys(doc.paths).filter((p) => p.startsWith('/runs'));
    expect(runs.sort()).toEqual([
      '/runs',
      '/runs/{id}',
      '/runs/{id}/events',
      '/runs/{id}/events/stream',
      '/runs/{id}/logs',
      '/runs/{id}/logs/stream',
      '/runs/{id}/tasks',
    ]);
    const params = (p: string): string[] => (doc.paths[p].get.parameters ?? []).map((x) => `${x.in}:${x.name}`).sort();
    expect(params('/runs')).toEqual(['query:env', 'query:limit', 'query:since', 'query:status', 'query:until']);
    expect(params('/runs/{id}/tasks')).toEqual(['path:id', 'query:node', 'query:status']);
    expect(params('/runs/{id}/events')).toEqual(['path:id', 'query:after', 'query:expiredCommands']);
    // An entry is a run's event or, asked for, an expired command that named the run.
    expect(doc.paths['/runs/{id}/events'].get.responses['200'].content?.['application/json']).toEqual({
      schema: {
        type: 'array',
        items: {
          oneOf: [
            { $ref: '#/components/schemas/RunEventEntryDto' },
            { $ref: '#/components/schemas/ExpiredCommandEntryDto' },
          ],
        },
      },
    });
    expect(params('/runs/{id}/logs')).toEqual([
      'path:id',
      'query:after',
      'query:attempt',
      'query:limit',
      'query:node',
      'query:stderrOnly',
      'query:task',
    ]);
    expect(params('/runs/{id}/events/stream')).toEqual(['header:Last-Event-ID', 'path:id', 'query:after']);
    expect(params('/runs/{id}/logs/stream')).toEqual([
      'header:Last-Event-ID',
      'path:id',
      'query:after',
      'query:attempt',
      'query:node',
      'query:stderrOnly',
      'query:task',
    ]);
    for (const p of runs) {
      const op = doc.paths[p].get;
      expect([p, op.tags, op.security]).toEqual([p, ['runs'], [{ bearer: [] }]]);
      expect([p, Object.keys(op.responses).sort()]).toEqual([
        p,
        p === '/runs'
          ? ['200', '400', '401', '503']
          : p.endsWith('/stream')
            ? ['200', '400', '401', '404', '429', '503']
            : ['200', '400', '401', '404', '503'],
      ]);
    }
    expect(Object.keys(doc.paths['/runs/{id}/events/stream'].get.responses['200'].content ?? {})).toEqual([
      'text/event-stream',
    ]);
    expect(doc.paths['/runs/{id}'].get.responses['200'].content?.['application/json']).toEqual({
      schema: { $ref: '#/components/schemas/RunSummaryDto' },
    });
    expect(doc.paths['/runs/{id}'].get.responses['404'].content?.['application/json']).toEqual({
      schema: { $ref: '#/components/schemas/ErrorBody' },
    });
    expect(doc.components.securitySchemes?.bearer?.scheme).toBe('bearer');
    expect(Object.keys(doc.components.schemas ?? {})).toEqual(
      expect.arrayContaining([
        'RunListEntryDto',
        'RunEventEntryDto',
        'ExpiredCommandEntryDto',
        'RunTasksDto',
        'RunLogsDto',
        'TaskLogRecordDto',
      ]),
    );
    // The rest of the API is in it too, grouped.
    expect(doc.paths['/releases'].get.tags).toEqual(['releases']);
    expect(doc.paths['/nodes/{uid}'].patch.tags).toEqual(['nodes']);
    // An upload of deployment files says its size limit and how a package is installed.
    const upload = doc.paths['/artifacts/{digest}'].put as { description?: string; responses: object };
    expect(Object.keys(upload.responses)).toEqual(expect.arrayContaining(['201', '413']));
    expect(upload.description).toMatch(/512 MiB.*artifact_digest/s);
    // And Swagger UI shows it.
    const ui = await get('/docs');
    expect([ui.status, (await ui.text()).includes('swagger')]).toEqual([200, true]);
  });
});
