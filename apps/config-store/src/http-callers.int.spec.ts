import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '@granule/service-kit';
import { startTestConfigStore, type TestConfigStore } from './testing/test-config-store';

const ALICE = `alice-${randomBytes(12).toString('hex')}`;
const CI = `ci-${randomBytes(12).toString('hex')}`;
const SINGLE = `single-${randomBytes(12).toString('hex')}`;

// Issue 20, points 4 and 5: the HTTP API never listens beyond loopback without a token, each
// token names its caller, and the audit and the request log record that name (never the token).
describe('config-store HTTP callers (real PostgreSQL, NATS and HTTP)', () => {
  let store: TestConfigStore & { base: string };
  let dir: string;
  const lines: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'granule-http-callers-'));
    const tokensFile = path.join(dir, 'api-tokens');
    writeFileSync(tokensFile, `# mounted from a Secret\n\nci=${CI}\n`, { mode: 0o600 });
    const logger = createLogger('config-store', { destination: { write: (l: string) => lines.push(l) } });
    store = await startTestConfigStore('config_http_callers', {
      http: { token: SINGLE },
      env: { GRANULE_API_TOKENS: `alice=${ALICE}`, GRANULE_API_TOKENS_FILE: tokensFile },
      runtime: { logger },
    });
  }, 60_000);

  afterAll(async () => {
    await store?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const call = (method: string, route: string, token: string | undefined, body?: unknown) =>
    fetch(`${store.base}${route}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  it('refuses to start beyond loopback without a token, in one line naming the variable and the fix', async () => {
    await expect(startTestConfigStore('config_http_open', { env: { GRANULE_HTTP_HOST: '0.0.0.0' } })).rejects.toThrow(
      /^invalid configuration: GRANULE_HTTP_HOST: 0\.0\.0\.0 is beyond loopback and no API token is set: set GRANULE_API_TOKEN, GRANULE_API_TOKENS or GRANULE_API_TOKENS_FILE, or listen on 127\.0\.0\.1$/,
    );
  });

  it('a bad entry is refused naming the variable and the entry, never the token', async () => {
    const err = await startTestConfigStore('config_http_bad', {
      env: { GRANULE_API_TOKENS: `ok=${ALICE},broken,bob=short-one` },
    }).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe(
      "invalid configuration: GRANULE_API_TOKENS: entry 2: expected name=token (no '=' in it); " +
        "GRANULE_API_TOKENS: entry 3: the token of 'bob' is too short: expected at least 16 characters (got 9)",
    );
    expect((err as Error).message).not.toContain(ALICE);
  });

  it('records each write with the name of the token that made it; the single token is api-token', async () => {
    expect((await call('POST', '/nodes', ALICE, { uid: 'by-alice', hostname: 'h1' })).status).toBe(201);
    expect((await call('POST', '/nodes', CI, { uid: 'by-ci', hostname: 'h2' })).status).toBe(201);
    expect((await call('POST', '/nodes', SINGLE, { uid: 'by-single', hostname: 'h3' })).status).toBe(201);
    expect((await call('POST', '/nodes', 'not-a-token-of-anyone', { uid: 'by-nobody', hostname: 'h4' })).status).toBe(
      401,
    );
    const audit = await store.runtime.api.audit.list();
    const byTarget = Object.fromEntries(audit.map((e) => [e.target, [e.caller, e.transport, e.operation, e.outcome]]));
    expect(byTarget).toEqual({
      'by-alice': ['alice', 'http', 'node.add', 'ok'],
      'by-ci': ['ci', 'http', 'node.add', 'ok'],
      'by-single': ['api-token', 'http', 'node.add', 'ok'],
    });
  });

  it('logs every HTTP call with its method, route, caller and status, and no token', async () => {
    lines.length = 0;
    expect((await call('GET', '/nodes/by-alice', ALICE)).status).toBe(200);
    expect((await call('GET', '/nodes/by-alice', undefined)).status).toBe(401);
    expect((await call('GET', '/nodes/by-alice', `${CI}x`)).status).toBe(401);
    const calls = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((r) => r['req'] !== undefined)
      .map((r) => ({
        method: (r['req'] as { method: string }).method,
        route: r['route'],
        caller: r['caller'],
        status: (r['res'] as { statusCode: number }).statusCode,
      }));
    expect(calls).toEqual([
      { method: 'GET', route: 'GET /nodes/:uid', caller: 'alice', status: 200 },
      { method: 'GET', route: 'GET /nodes/:uid', caller: 'anonymous', status: 401 },
      { method: 'GET', route: 'GET /nodes/:uid', caller: 'anonymous', status: 401 },
    ]);
    const text = lines.join('\n');
    for (const token of [ALICE, CI, SINGLE]) expect(text).not.toContain(token);
  });
});
