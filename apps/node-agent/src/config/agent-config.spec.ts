import { ConfigError } from '@granule/service-kit/config';
import { AGENT_ENV_VARS, loadAgentConfig } from './agent-config';

const host = { hostname: 'web-01', address: '10.0.0.7' };
const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadAgentConfig(env, host);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
};

describe('loadAgentConfig', () => {
  it('fills every default from the uid and root alone', () => {
    expect(loadAgentConfig({ GRANULE_NODE_UID: 'node-1', GRANULE_ROOT: '/srv/granule/' }, host)).toEqual({
      nodeUid: 'node-1',
      rootDir: '/srv/granule',
      stateDir: '/srv/granule/.granule',
      allowedRoots: ['/srv/granule'],
      natsUrl: 'nats://127.0.0.1:4222',
      subjectPrefix: 'granule',
      agentToken: undefined,
      heartbeatSeconds: 2,
      rebootCommand: 'systemctl reboot',
      hostname: 'web-01',
      address: '10.0.0.7',
      logLevel: 'info',
      healthPort: 8414,
      spawnHelper: 'auto',
      artifactCacheBytes: 2 * 1024 ** 3,
    });
  });

  it('reads every variable as written', () => {
    const config = loadAgentConfig(
      {
        GRANULE_NODE_UID: 'db_2',
        GRANULE_ROOT: '/var/lib/granule',
        GRANULE_ALLOWED_ROOTS: '/etc/app, /opt/app/../app2,',
        GRANULE_NATS_URL: 'nats://a:4222,nats://b:4222',
        GRANULE_SUBJECT_PREFIX: 'prod.eu',
        GRANULE_AGENT_TOKEN: 's3cret',
        GRANULE_HEARTBEAT_SECONDS: '5',
        GRANULE_REBOOT_COMMAND: 'shutdown -r now',
        GRANULE_AGENT_HOSTNAME: 'db-2.example',
        GRANULE_AGENT_ADDRESS: '192.168.1.2',
        GRANULE_LOG_LEVEL: 'debug',
        GRANULE_SPAWN_HELPER: 'node',
        GRANULE_ARTIFACT_CACHE_MB: '512',
      },
      host,
    );
    expect(config).toMatchObject({
      allowedRoots: ['/etc/app', '/opt/app2'],
      natsUrl: 'nats://a:4222,nats://b:4222',
      subjectPrefix: 'prod.eu',
      agentToken: 's3cret',
      heartbeatSeconds: 5,
      rebootCommand: 'shutdown -r now',
      hostname: 'db-2.example',
      address: '192.168.1.2',
      logLevel: 'debug',
      spawnHelper: 'node',
      artifactCacheBytes: 512 * 1024 * 1024,
    });
  });

  it('names every missing required variable', () => {
    expect(problemsOf({})).toEqual([
      'GRANULE_NODE_UID: must be set to the uid of this node as the plan names it (it is not set)',
      'GRANULE_ROOT: must be set to the absolute directory the agent works in (it is not set)',
    ]);
  });

  it('reports every bad value at once, quoting what was found', () => {
    expect(
      problemsOf({
        GRANULE_NODE_UID: 'node.1',
        GRANULE_ROOT: 'relative/dir',
        GRANULE_ALLOWED_ROOTS: '/ok,tmp',
        GRANULE_NATS_URL: 'http://x:4222',
        GRANULE_SUBJECT_PREFIX: 'a..b',
        GRANULE_HEARTBEAT_SECONDS: 'two',
        GRANULE_LOG_LEVEL: 'loud',
        GRANULE_SPAWN_HELPER: 'fast',
        GRANULE_ARTIFACT_CACHE_MB: '0',
      }),
    ).toEqual([
      `GRANULE_NODE_UID: must be a node uid of 1 to 63 letters, digits, '_' or '-', starting with a letter or digit (got "node.1")`,
      'GRANULE_ROOT: must be an absolute path (got "relative/dir")',
      'GRANULE_ALLOWED_ROOTS: must be a comma-separated list of absolute paths (got ["/ok","tmp"])',
      'GRANULE_HEARTBEAT_SECONDS: must be a whole number of seconds (got "two")',
      'GRANULE_LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace (got "loud")',
      'GRANULE_SPAWN_HELPER: must be one of auto, native, node (got "fast")',
      'GRANULE_ARTIFACT_CACHE_MB: must be at least 1 (got 0)',
      'GRANULE_NATS_URL: must be a nats:// or tls:// URL, or a comma-separated list of them (got "http://x:4222")',
      'GRANULE_SUBJECT_PREFIX: must be dotted tokens of letters, digits, _ and - (e.g. granule) (got "a..b")',
    ]);
  });

  it('GRANULE_HEALTH_PORT - 0 turns the health server off; anything but a port is one problem', () => {
    expect(
      loadAgentConfig({ GRANULE_NODE_UID: 'n', GRANULE_ROOT: '/r', GRANULE_HEALTH_PORT: '0' }, host).healthPort,
    ).toBe(0);
    expect(problemsOf({ GRANULE_NODE_UID: 'n', GRANULE_ROOT: '/r', GRANULE_HEALTH_PORT: '65536' })).toEqual([
      'GRANULE_HEALTH_PORT: must be a port number, 0 turns the health server off (got 65536)',
    ]);
  });

  it("reads no Redis or presence TTL: NATS is the only connection, presence is the orchestrator's", () => {
    const config = loadAgentConfig(
      {
        GRANULE_NODE_UID: 'n',
        GRANULE_ROOT: '/r',
        GRANULE_REDIS_URL: 'redis://:pw@cache:6379',
        GRANULE_PRESENCE_TTL_SECONDS: 'x',
      },
      host,
    );
    expect(Object.keys(config)).not.toContain('redisUrl');
    expect(JSON.stringify(config)).not.toContain('cache');
    expect(AGENT_ENV_VARS).not.toContain('GRANULE_REDIS_URL');
  });

  it('the error message is one line listing every problem', () => {
    expect(() => loadAgentConfig({ GRANULE_ROOT: '/r', GRANULE_HEARTBEAT_SECONDS: '0' }, host)).toThrow(
      'invalid configuration: GRANULE_NODE_UID: must be set to the uid of this node as the plan names it (it is not set); GRANULE_HEARTBEAT_SECONDS: must be at least 1 (got 0)',
    );
  });
});
