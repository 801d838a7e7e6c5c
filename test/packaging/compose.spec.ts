import { parse } from 'yaml';
import { DEFAULT_HEALTH_PORTS } from '@granule/observability';
import { dockerTargets, exists, readText, variablesRead } from './packaging-files';

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile?: string; target?: string };
  command?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test?: string[]; disable?: boolean };
}

const compose = parse(readText('docker-compose.yml'), { merge: true }) as { services: Record<string, ComposeService> };
const services = compose.services;
/** Compose's `${NAME:-default}` as docker compose resolves it with nothing set. */
const resolved = (value: string): string => value.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1');
/** Granule services by compose name → the app whose image (build target) they run. */
const granule = Object.fromEntries(
  Object.entries(services).flatMap(([name, s]) => (s.build?.target ? [[name, s.build.target]] : [])),
);

describe('docker-compose.yml', () => {
  it('runs NATS with JetStream, PostgreSQL, Redis, the migration, the three services and two agents', () => {
    expect(Object.keys(services)).toEqual([
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
    expect(services.nats.command).toContain('-js');
    expect(granule).toEqual({
      migrate: 'config-store',
      'config-store': 'config-store',
      'graph-planner': 'graph-planner',
      orchestrator: 'orchestrator',
      'node-agent-1': 'node-agent',
      'node-agent-2': 'node-agent',
    });
  });

  it('every build reference exists: context, Dockerfile, target, and the command files', () => {
    const targets = dockerTargets();
    for (const [name, s] of Object.entries(services)) {
      if (!s.build) continue;
      expect([name, exists(s.build.context), exists(s.build.dockerfile ?? 'Dockerfile')]).toEqual([name, true, true]);
      expect(targets).toContain(s.build.target);
    }
    expect(services.migrate.command).toEqual(['node', 'dist/apps/config-store/src/migrate.js']);
    expect(exists('apps/config-store/src/migrate.ts')).toBe(true);
    expect(exists('deploy/docker/healthcheck.cjs')).toBe(true);
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

  it('the services share one NATS, database, subject prefix and agent token', () => {
    const values = (variable: string) => [
      ...new Set(
        Object.keys(granule).flatMap((n) => {
          const value = services[n].environment?.[variable];
          return value ? [resolved(value)] : [];
        }),
      ),
    ];
    expect(values('GRANULE_NATS_URL')).toEqual(['nats://nats:4222']);
    expect(values('GRANULE_DATABASE_URL')).toEqual(['postgres://granule:granule@postgres:5432/granule']);
    expect(values('GRANULE_SUBJECT_PREFIX')).toEqual(['granule']);
    expect(values('GRANULE_REDIS_URL')).toEqual(['redis://redis:6379']);
    expect(values('GRANULE_AGENT_TOKEN')).toEqual(['granule-dev-agent-token']);
    expect(resolved(services['config-store'].environment?.GRANULE_API_TOKEN ?? '').length).toBeGreaterThanOrEqual(16);
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
    for (const [name, app] of Object.entries(granule)) {
      if (name === 'migrate') continue;
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

  it('depends_on names only services of the file', () => {
    for (const [name, s] of Object.entries(services))
      for (const dep of Object.keys(s.depends_on ?? {}))
        expect([name, dep, dep in services]).toEqual([name, dep, true]);
  });
});
