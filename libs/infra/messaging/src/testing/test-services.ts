import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { NatsConnection, Payload, RequestOptions } from '@nats-io/transport-node';
import { Redis } from 'ioredis';
import { connectNats, type ConnectNatsOptions } from '../nats-connection';
import { signatureHeaders } from '../nats-request';

/**
 * How the integration tests reach the project's own development servers, which tools/setup.sh
 * starts and describes in `<dir>/connection.json`: a NATS with authorization on (the harness's
 * `.creds` file, an admin identity: tests use subject prefixes of their own) and a Redis with a
 * password (in the URL).
 */
export interface TestServices {
  natsUrl: string;
  /** Path of the test harness's NATS credentials file. */
  natsCreds: string;
  /** An orchestrator's credentials file: what an agent under test requires a dispatch to be signed with. */
  orchestratorCreds: string;
  /** `redis://:<password>@127.0.0.1:<port>`. */
  redisUrl: string;
}

/** Where tools/setup.sh keeps them (GRANULE_TEST_SERVICES_DIR, as for setup.sh). */
export function testServicesFile(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(env.GRANULE_TEST_SERVICES_DIR || '/tmp/granule-test-services', 'connection.json');
}

/** The connection facts, or an error that says to run tools/setup.sh. */
export function testServices(env: NodeJS.ProcessEnv = process.env): TestServices {
  const file = testServicesFile(env);
  let parsed: Partial<TestServices>;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<TestServices>;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(
      `the tests' NATS and Redis are not set up (${file}: ${code === 'ENOENT' ? 'no such file' : (err as Error).message}): run tools/setup.sh`,
    );
  }
  for (const key of ['natsUrl', 'natsCreds', 'orchestratorCreds', 'redisUrl'] as const) {
    if (typeof parsed[key] !== 'string' || parsed[key] === '')
      throw new Error(`${file}: ${key} is missing: run tools/setup.sh again`);
  }
  return parsed as TestServices;
}

/**
 * A connection to the tests' NATS as the test harness. Its `request` signs each request as the
 * CLI's do (the services refuse unsigned calls), so a test may ask with `nc.request` directly.
 */
export async function connectTestNats(name: string, options: ConnectNatsOptions = {}): Promise<NatsConnection> {
  const { natsUrl, natsCreds } = testServices();
  const nc = await connectNats({ natsUrl, natsCreds }, name, {
    hint: 'the tests connect to the NATS tools/setup.sh starts: run tools/setup.sh',
    ...options,
  });
  const plain = nc.request.bind(nc);
  nc.request = (subject: string, payload?: Payload, opts?: RequestOptions) => {
    const data = typeof payload === 'string' ? new TextEncoder().encode(payload) : (payload ?? new Uint8Array());
    return plain(subject, data, {
      timeout: 1000,
      ...opts,
      headers: opts?.headers ?? signatureHeaders(nc, subject, data),
    });
  };
  return nc;
}

/** A client of the tests' Redis (with its password); `quit()` it when done. */
export function testRedis(): Redis {
  return new Redis(testServices().redisUrl);
}

/**
 * The variables that point a service or a CLI a test starts at the tests' NATS and Redis, with
 * the harness's credential.
 */
export function testServicesEnv(): { GRANULE_NATS_URL: string; GRANULE_NATS_CREDS: string; GRANULE_REDIS_URL: string } {
  const s = testServices();
  return { GRANULE_NATS_URL: s.natsUrl, GRANULE_NATS_CREDS: s.natsCreds, GRANULE_REDIS_URL: s.redisUrl };
}
