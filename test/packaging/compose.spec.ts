import { parse } from 'yaml';
import { DEFAULT_HEALTH_PORTS } from '@granule/observability';
import { dockerTargets, exists, readText, variablesRead } from './packaging-files';

// docker-compose.yml, statically: Docker does not run here. compose-auth-init.e2e.spec.ts runs its
// auth-init script and NATS command for real.

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile?: string; target?: string };
  command?: string[];
  user?: string;
  environment?: Record<string, string | null>;
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test?: string[]; disable?: boolean };
}

const text = readText('docker-compose.yml');
const compose = parse(text, { merge: true }) as { services: Record<string, ComposeService>; volumes: object };
const services = compose.services;
/** Compose's `${NAME:?message}` as a test value: `<NAME>`. */
const resolved = (value: string): string => value.replace(/\$\{([A-Z_]+):\?[^}]*\}/g, '<$1>');
/** Granule services (not auth-init) by compose name → the app whose image (build target) they run. */
const granule = Object.fromEntries(
  Object.entries(services).flatMap(([name, s]) =>
    s.build?.target && name !== 'auth-init' ? [[name, s.build.target]] : [],
  ),
);
const longRunning = Object.keys(granule).filter((n) => n !== 'migrate');
/** The identity each long-running service connects to NATS as (auth-init's names). */
const identity = (name: string): string => name.replace(/^node-agent-/, 'agent-');
const volumesOf = (s: ComposeService) =>
  (s.volumes ?? []).map((v) => {
    const [source, target, mode] = v.split(':');
    return { source, target, mode };
  });
const authInitScript = readText('deploy/docker/auth-init.sh');

describe('docker-compose.yml', () => {
  it('runs the trust store set-up, NATS, PostgreSQL, Redis, the migration, the three services and two agents', () => {
    expect(Object.keys(services)).toEqual([
      'auth-init',
      'nats',
      'postgres',
      'redis',
      'migrate',
      'config-store',
      'graph-planner',
      'orchestrator',
      'node-agent-1',
      'node-agent-2',
    ]);
    expect(services.nats.command).toEqual(expect.arrayContaining(['-js', '-sd', '/data']));
    expect(granule).toEqual({
      migrate: 'config-store',
      'config-store': 'config-store',
      'graph-planner': 'graph-planner',
      orchestrator: 'orchestrator',
      'node-agent-1': 'node-agent',
      'node-agent-2': 'node-agent',
    });
  });

  it('every build reference exists: context, Dockerfile, target, the command files and the NATS configuration', () => {
    const targets = dockerTargets();
    for (const [name, s] of Object.entries(services)) {
      if (!s.build) continue;
      expect([name, exists(s.build.context), exists(s.build.dockerfile ?? 'Dockerfile')]).toEqual([name, true, true]);
      expect(targets).toContain(s.build.target);
    }
    expect(services.migrate.command).toEqual(['node', 'dist/apps/config-store/src/migrate.js']);
    expect(services['auth-init'].command).toEqual(['sh', 'deploy/docker/auth-init.sh']);
    for (const file of [
      'apps/config-store/src/migrate.ts',
      'deploy/docker/healthcheck.cjs',
      'deploy/docker/auth-init.sh',
    ])
      expect([file, exists(file)]).toEqual([file, true]);
    const binds = Object.values(services).flatMap((s) => volumesOf(s).filter((v) => v.source.startsWith('./')));
    for (const b of binds) expect([b.source, exists(b.source)]).toEqual([b.source, true]);
    expect(binds.map((b) => b.source)).toEqual(['./deploy/docker/nats-server.conf']);
  });

  it('every GRANULE_* variable given to a service is one that service reads', () => {
    const unread = Object.entries(granule).flatMap(([name, app]) => {
      const read = variablesRead(app);
      return Object.keys(services[name].environment ?? {})
        .filter((v) => v.startsWith('GRANULE_') && !read.includes(v))
        .map((v) => `${name}: ${v}`);
    });
    expect(unread).toEqual([]);
  });

  it('no password, token or key has a default: compose refuses to start without each one', () => {
    const interpolations = [...text.matchAll(/\$\{([^}]*)\}/g)].map((m) => m[1]);
    expect(interpolations.filter((i) => !/^[A-Z_]+:\?\S/.test(i))).toEqual([]);
    expect([...new Set(interpolations.map((i) => i.split(':')[0]))].sort()).toEqual([
      'GRANULE_AGENT_TOKEN',
      'GRANULE_API_TOKEN',
      'POSTGRES_PASSWORD',
      'REDIS_PASSWORD',
    ]);
    // A secret-looking variable is either required (${X:?...}) or passed through from the host (no value).
    for (const [name, s] of Object.entries(services))
      for (const [key, value] of Object.entries(s.environment ?? {}))
        if (/PASSWORD|TOKEN|SECRET|_KEY$|_URL$/.test(key) && value !== null && /PASSWORD|TOKEN|KEY|@/.test(key + value))
          expect([name, key, /\$\{[A-Z_]+:\?/.test(value)]).toEqual([name, key, true]);
  });

  it('the services share one NATS, database, Redis, subject prefix and agent token, with the passwords in them', () => {
    const values = (variable: string) => [
      ...new Set(
        Object.keys(granule).flatMap((n) => {
          const value = services[n].environment?.[variable];
          return value ? [resolved(value)] : [];
        }),
      ),
    ];
    expect(values('GRANULE_NATS_URL')).toEqual(['nats://nats:4222']);
    expect(values('GRANULE_DATABASE_URL')).toEqual(['postgres://granule:<POSTGRES_PASSWORD>@postgres:5432/granule']);
    expect(values('GRANULE_SUBJECT_PREFIX')).toEqual(['granule']);
    expect(values('GRANULE_REDIS_URL')).toEqual(['redis://:<REDIS_PASSWORD>@redis:6379']);
    expect(values('GRANULE_AGENT_TOKEN')).toEqual(['<GRANULE_AGENT_TOKEN>']);
    expect(resolved(services['config-store'].environment?.GRANULE_API_TOKEN ?? '')).toBe('<GRANULE_API_TOKEN>');
    expect(resolved(services.postgres.environment?.POSTGRES_PASSWORD ?? '')).toBe('<POSTGRES_PASSWORD>');
  });

  it('Redis requires the password: the server is started with it and its health check sends it', () => {
    expect(resolved(services.redis.environment?.REDIS_PASSWORD ?? '')).toBe('<REDIS_PASSWORD>');
    expect(services.redis.command?.join(' ')).toContain('redis-server --requirepass "$$REDIS_PASSWORD"');
    expect(services.redis.healthcheck?.test?.join(' ')).toContain('REDISCLI_AUTH="$$REDIS_PASSWORD" redis-cli ping');
  });

  it('nothing is published beyond 127.0.0.1, and PostgreSQL and Redis are not published at all', () => {
    const published = Object.entries(services).flatMap(([name, s]) => (s.ports ?? []).map((p) => `${name} ${p}`));
    expect(published.filter((p) => !/^\S+ 127\.0\.0\.1:\d+:\d+$/.test(p))).toEqual([]);
    expect(published.map((p) => p.split(' ')[0])).toEqual(
      expect.not.arrayContaining(['postgres', 'redis', 'auth-init', 'migrate']),
    );
    expect(published).toContain('nats 127.0.0.1:4222:4222');
  });

  it("NATS runs with authorization on: it includes the trust store's nats-auth.conf that auth-init writes", () => {
    expect(services.nats.command?.slice(0, 2)).toEqual(['-c', '/etc/nats/config/nats-server.conf']);
    expect(volumesOf(services.nats)).toEqual([
      { source: './deploy/docker/nats-server.conf', target: '/etc/nats/config/nats-server.conf', mode: 'ro' },
      { source: 'nats-auth', target: '/etc/nats/auth', mode: 'ro' },
      { source: 'nats-data', target: '/data', mode: undefined },
    ]);
    expect(readText('deploy/docker/nats-server.conf')).toMatch(/^include \.\.\/auth\/nats-auth\.conf$/m);
    expect(volumesOf(services['auth-init'])).toContainEqual({
      source: 'nats-auth',
      target: '/out/nats',
      mode: undefined,
    });
    expect(authInitScript).toContain('"$STORE/nats-auth.conf" "$OUT/nats/nats-auth.conf"');
    expect(services.nats.depends_on?.['auth-init']).toEqual({ condition: 'service_completed_successfully' });
  });

  it('every service and agent connects with its own .creds, mounted alone and read-only; the keys stay with auth-init', () => {
    const handedOut = volumesOf(services['auth-init']).filter((v) => v.source.startsWith('creds-'));
    for (const name of longRunning) {
      const s = services[name];
      expect([name, s.environment?.GRANULE_NATS_CREDS]).toEqual([name, '/run/granule/nats.creds']);
      const creds = volumesOf(s).filter((v) => v.source.startsWith('creds-') || v.source.startsWith('nats-'));
      expect([name, creds]).toEqual([
        name,
        [{ source: `creds-${identity(name)}`, target: '/run/granule', mode: 'ro' }],
      ]);
      // auth-init fills that volume with that identity's credential.
      expect([name, handedOut.find((v) => v.source === `creds-${identity(name)}`)?.target]).toEqual([
        name,
        `/out/${identity(name)}`,
      ]);
    }
    expect(handedOut.map((v) => v.source).sort()).toEqual(longRunning.map((n) => `creds-${identity(n)}`).sort());
    expect(authInitScript).toMatch(/for service in orchestrator config-store graph-planner; do/);
    expect(authInitScript).toContain('"$STORE/creds/$service.creds" "$OUT/$service/nats.creds"');
    expect(authInitScript).toContain('"$STORE/creds/agent-$node.creds" "$OUT/agent-$node/nats.creds"');
    const agents = (services['auth-init'].environment?.GRANULE_AGENT_NODES ?? '').split(' ');
    expect(agents).toEqual(
      longRunning.filter((n) => n.startsWith('node-agent-')).map((n) => services[n].environment?.GRANULE_NODE_UID),
    );
    const trust = Object.entries(services).filter(([, s]) => volumesOf(s).some((v) => v.source === 'nats-trust'));
    expect(trust.map(([name]) => name)).toEqual(['auth-init']);
  });

  it('the agents are nodes 1 and 2 with a root directory; migrations run once, before the services', () => {
    expect([
      services['node-agent-1'].environment?.GRANULE_NODE_UID,
      services['node-agent-2'].environment?.GRANULE_NODE_UID,
    ]).toEqual(['1', '2']);
    expect(services['node-agent-2'].environment?.GRANULE_ROOT).toBe('/var/lib/granule');
    expect(services['config-store'].environment?.GRANULE_RUN_MIGRATIONS).toBe('false');
    for (const name of ['config-store', 'graph-planner', 'orchestrator'])
      expect([name, services[name].depends_on?.migrate]).toEqual([
        name,
        { condition: 'service_completed_successfully' },
      ]);
  });

  it('each long-running Granule service is health-checked on /healthz at its own health port', () => {
    for (const name of longRunning) {
      const app = granule[name];
      expect([name, services[name].healthcheck?.test]).toEqual([
        name,
        ['CMD', 'node', 'deploy/docker/healthcheck.cjs', '/healthz'],
      ]);
      expect([name, services[name].environment?.GRANULE_HEALTH_PORT]).toEqual([
        name,
        String(DEFAULT_HEALTH_PORTS[app as keyof typeof DEFAULT_HEALTH_PORTS]),
      ]);
    }
  });

  it('depends_on and volumes name only services and volumes of the file', () => {
    for (const [name, s] of Object.entries(services)) {
      for (const dep of Object.keys(s.depends_on ?? {}))
        expect([name, dep, dep in services]).toEqual([name, dep, true]);
      for (const v of volumesOf(s).filter((x) => !x.source.startsWith('./')))
        expect([name, v.source, v.source in compose.volumes]).toEqual([name, v.source, true]);
    }
  });
});

describe('Dockerfile', () => {
  const dockerfile = readText('Dockerfile');
  /** The lines of one stage, `FROM ... AS name` up to the next FROM. */
  const stage = (name: string): string =>
    dockerfile.split(/^(?=FROM )/m).find((s) => new RegExp(`^FROM \\S+ AS ${name}\\s*$`, 'm').test(s)) ?? '';

  it('builds on a maintained Node LTS (22 or 24, bookworm-slim)', () => {
    expect(/^ARG NODE_IMAGE=(\S+)$/m.exec(dockerfile)?.[1]).toMatch(/^node:(22|24)-bookworm-slim$/);
    expect(dockerfile.match(/^FROM \$\{NODE_IMAGE\} AS (build|runtime)$/gm)).toHaveLength(2);
  });

  it('config-store, graph-planner and orchestrator run as the non-root user node; the agent stays root to run tasks', () => {
    expect(dockerTargets()).toEqual([
      'build',
      'runtime',
      'config-store',
      'graph-planner',
      'node-agent',
      'orchestrator',
    ]);
    for (const target of ['config-store', 'graph-planner', 'orchestrator'])
      expect([target, /^USER node$/m.test(stage(target))]).toEqual([target, true]);
    expect(/^USER /m.test(stage('node-agent'))).toBe(false);
  });

  it('the images carry the CLI as granule, auth-init.sh and the health check', () => {
    const runtime = stage('runtime');
    expect(runtime).toContain('COPY deploy/docker/healthcheck.cjs deploy/docker/auth-init.sh ./deploy/docker/');
    expect(runtime).toContain('exec node /opt/granule/dist/apps/cli/src/main.js "$@"');
    expect(runtime).toContain('> /usr/local/bin/granule');
    expect(exists('apps/cli/src/main.ts')).toBe(true);
  });

  it('no credential file goes into an image: the build context leaves out .env and the trust store', () => {
    const ignored = readText('.dockerignore').split('\n');
    expect(ignored).toEqual(expect.arrayContaining(['.env', '*.creds', '*.nk']));
  });
});
