// The trust store of the development servers tools/setup.sh starts for the integration tests:
//   node tools/test-services.mjs init DIR
// creates, unless DIR already holds them, DIR/auth (a trust store: the project's own server
// configuration, nats-auth.conf), DIR/int-tests.creds (the test harness's credential, an admin),
// DIR/int-orchestrator.creds (an orchestrator's, whose signature an agent under test requires on
// a dispatch), DIR/nats.conf and DIR/redis.password. Runs before any build: it bundles the nats-auth library from its
// TypeScript sources with esbuild (a dev dependency) in memory, so a fresh clone needs no dist/.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);

const [command, dir, natsPort] = process.argv.slice(2);
if (command !== 'init' || !dir || !/^\d+$/.test(natsPort ?? '')) {
  process.stderr.write('usage: node tools/test-services.mjs init DIR NATS_PORT\n');
  process.exit(2);
}

/** The nats-auth library, compiled from source with its packages into one CommonJS file. */
async function loadNatsAuth() {
  const esbuild = require('esbuild');
  const tmp = mkdtempSync(path.join(tmpdir(), 'granule-nats-auth-'));
  const file = path.join(tmp, 'nats-auth.cjs');
  try {
    await esbuild.build({
      entryPoints: [path.join(root, 'libs/infra/nats-auth/src/index.ts')],
      tsconfig: path.join(root, 'tsconfig.base.json'),
      bundle: true,
      platform: 'node',
      format: 'cjs',
      outfile: file,
      logLevel: 'error',
    });
    return require(file);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

const auth = path.join(dir, 'auth');
// Tests use subject prefixes of their own (test.<hex>, …) and create streams and buckets: the
// harness connects as the installation's admin (every subject), never anonymously.
const identities = [
  { name: 'int-tests', role: 'admin' },
  { name: 'int-orchestrator', role: 'orchestrator' },
];
mkdirSync(dir, { recursive: true, mode: 0o700 });
const missing = identities.filter((i) => !existsSync(path.join(dir, `${i.name}.creds`)));
if (!existsSync(path.join(auth, 'settings.json')) || missing.length > 0) {
  const { TrustStore } = await loadNatsAuth();
  const store = existsSync(path.join(auth, 'settings.json')) ? TrustStore.open(auth) : await TrustStore.create(auth);
  for (const i of missing) {
    const file = path.join(dir, `${i.name}.creds`);
    writeFileSync(file, (await store.issue(i)).creds, { mode: 0o600 });
    process.stderr.write(`[setup] the tests' trust store ${auth}: ${i.role} credential ${file}\n`);
  }
}
const password = path.join(dir, 'redis.password');
if (!existsSync(password)) writeFileSync(password, randomBytes(18).toString('hex'), { mode: 0o600 });
// Rewritten every time: the port may have changed (GRANULE_TEST_NATS_PORT).
writeFileSync(
  path.join(dir, 'nats.conf'),
  [
    "# Written by tools/setup.sh: the integration tests' NATS, authorization on (the trust store in auth/).",
    'host: 127.0.0.1',
    `port: ${natsPort}`,
    `jetstream { store_dir: ${JSON.stringify(path.join(dir, 'nats-store'))} }`,
    'include "auth/nats-auth.conf"',
    '',
  ].join('\n'),
  { mode: 0o600 },
);
