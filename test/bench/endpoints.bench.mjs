// npm run bench:endpoints — what answering on NATS through Nest's microservices transport
// (GranuleNatsServer, every service's endpoints) costs next to a bare NATS subscription that
// answers the same envelope by hand (ADR 0020). One process, a subject prefix of its own, on a
// nats-server of its own with authorization on: server and client connect with credentials and
// every request is signed, as the services' are. Prints, for each: round trips one after another
// (median and p99 latency), round trips 64 at a time (requests per second), and the server
// side's CPU per request.
//
//   node test/bench/endpoints.bench.mjs [--requests N]   (default 5000)
//   BENCH_AUTH=0 runs on the machine's NATS (or GRANULE_NATS_URL) as it is, without credentials
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSecureServers } from './bench-support.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(import.meta.url);
const dist = (p) => require(path.join(root, 'dist', p));
const { Controller, Module } = require('@nestjs/common');
const { NestFactory, APP_FILTER } = require('@nestjs/core');
const { MessagePattern } = require('@nestjs/microservices');
const { connectNats, request } = dist('libs/infra/messaging/src/index.js');
const { GranuleNatsServer, ReplyExceptionFilter } = dist('libs/infra/nats-endpoints/src/index.js');

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const REQUESTS = arg('requests', 5000);
const CONCURRENCY = 64;
const AUTH = process.env.BENCH_AUTH !== '0';
const SERVICE = { name: 'bench', code: 'BENCH', hint: 'it runs in this process' };
const prefix = `benchep${randomBytes(3).toString('hex')}`;
// A payload the size of a typical query: a run id and a few fields.
const PAYLOAD = { runId: '20261125-101500-ab12', after: 12, upTo: 40, note: 'x'.repeat(120) };

class Echo {
  echo(data) {
    return { received: data };
  }
}
MessagePattern('bench.nest')(Echo.prototype, 'echo', Object.getOwnPropertyDescriptor(Echo.prototype, 'echo'));
Controller()(Echo);
class EchoModule {}
Module({ controllers: [Echo], providers: [{ provide: APP_FILTER, useClass: ReplyExceptionFilter }] })(EchoModule);

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

async function measure(client, subject) {
  const latencies = [];
  for (let i = 0; i < Math.min(REQUESTS, 2000); i++) {
    const t = performance.now();
    await request(client, SERVICE, subject, PAYLOAD);
    latencies.push(performance.now() - t);
  }
  latencies.sort((a, b) => a - b);
  const cpu = process.cpuUsage();
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < REQUESTS) {
        next++;
        await request(client, SERVICE, subject, PAYLOAD);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  return {
    median: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    rps: REQUESTS / seconds,
    // Client and server share this process: the CPU per request is both, the same client each time.
    cpuMs: (used.user + used.system) / 1000 / REQUESTS,
  };
}

const work = mkdtempSync(path.join(tmpdir(), 'granule-bench-endpoints-'));
// Its subjects (`<prefix>.bench.*`) are no role's: both sides are admins of the bench's trust store.
const secured = AUTH
  ? await startSecureServers({
      work,
      prefix,
      identities: [
        ['bench-server', 'admin'],
        ['bench-client', 'admin'],
      ],
    })
  : undefined;
const NATS_URL = secured?.natsUrl ?? process.env.GRANULE_NATS_URL ?? 'nats://127.0.0.1:4222';
const settingsOf = (name) => ({ natsUrl: NATS_URL, ...(secured ? { natsCreds: secured.credsOf(name) } : {}) });
const server = await connectNats(settingsOf('bench-server'), 'bench-endpoints-server');
const client = await connectNats(settingsOf('bench-client'), 'bench-endpoints-client');
const raw = server.subscribe(`${prefix}.bench.raw`, {
  queue: 'bench',
  callback: (_err, msg) => {
    const data = JSON.parse(new TextDecoder().decode(msg.data));
    msg.respond(JSON.stringify({ ok: true, result: { received: data } }));
  },
});
const app = await NestFactory.createMicroservice(EchoModule, {
  strategy: new GranuleNatsServer({ connection: server, prefix, queue: 'bench' }),
  logger: false,
});
await app.listen();
await server.flush();
try {
  // Warm both paths (JIT) before measuring.
  for (let i = 0; i < 500; i++) {
    await request(client, SERVICE, `${prefix}.bench.raw`, PAYLOAD);
    await request(client, SERVICE, `${prefix}.bench.nest`, PAYLOAD);
  }
  const bare = await measure(client, `${prefix}.bench.raw`);
  const nest = await measure(client, `${prefix}.bench.nest`);
  const line = (name, r) =>
    `${name.padEnd(34)} median ${r.median.toFixed(3)} ms   p99 ${r.p99.toFixed(3)} ms   ${Math.round(r.rps)} req/s (${CONCURRENCY} at a time)   CPU ${r.cpuMs.toFixed(3)} ms/req (client + server)`;
  console.log(
    `endpoints benchmark: ${REQUESTS} requests each, NATS ${NATS_URL} (${secured ? 'authorization on, signed requests' : 'BENCH_AUTH=0: no credentials'})`,
  );
  console.log(line('bare subscription, hand envelope', bare));
  console.log(line('Nest transport (GranuleNatsServer)', nest));
  console.log(
    `Nest adds: ${(nest.median - bare.median).toFixed(3)} ms median latency, ${(nest.cpuMs - bare.cpuMs).toFixed(3)} ms CPU per request`,
  );
} finally {
  raw.unsubscribe();
  await app.close();
  await client.close();
  await server.close();
  await secured?.stop();
  rmSync(work, { recursive: true, force: true });
}
