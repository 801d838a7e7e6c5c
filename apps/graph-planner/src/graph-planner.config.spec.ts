import { ConfigError } from '@granule/service-kit';
import { loadGraphPlannerConfig } from './graph-planner.config';

describe('loadGraphPlannerConfig', () => {
  it('defaults - local NATS and PostgreSQL, prefix granule, no migrations', () => {
    expect({ ...loadGraphPlannerConfig({}) }).toEqual({
      natsUrl: 'nats://127.0.0.1:4222',
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/granule',
      subjectPrefix: 'granule',
      runMigrations: false,
      healthPort: 8412,
    });
  });

  it('reads every GRANULE_* variable', () => {
    const config = loadGraphPlannerConfig({
      GRANULE_NATS_URL: 'nats://a:4222,nats://b:4222',
      GRANULE_DATABASE_URL: 'postgresql://u:p@db/g',
      GRANULE_SUBJECT_PREFIX: 'staging.granule',
      GRANULE_RUN_MIGRATIONS: '1',
      GRANULE_HEALTH_PORT: '0',
    });
    expect({ ...config }).toEqual({
      natsUrl: 'nats://a:4222,nats://b:4222',
      databaseUrl: 'postgresql://u:p@db/g',
      subjectPrefix: 'staging.granule',
      runMigrations: true,
      healthPort: 0,
    });
  });

  it('names every bad variable in one message', () => {
    let error: unknown;
    try {
      loadGraphPlannerConfig({ GRANULE_NATS_URL: 'http://x', GRANULE_DATABASE_URL: 'mysql://x' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toBe(
      'invalid configuration: GRANULE_DATABASE_URL: must be a postgres:// URL (got "mysql://x"); GRANULE_NATS_URL: must be a nats:// or tls:// URL, or a comma-separated list of them (got "http://x")',
    );
  });

  it('GRANULE_HEALTH_PORT - anything but a port from 0 to 65535 is one problem', () => {
    expect(() => loadGraphPlannerConfig({ GRANULE_HEALTH_PORT: 'http' })).toThrow(
      'invalid configuration: GRANULE_HEALTH_PORT: must be a port number from 0 to 65535 (0 turns the health server off) (got "http")',
    );
    expect(() => loadGraphPlannerConfig({ GRANULE_HEALTH_PORT: '70000' })).toThrow('(got 70000)');
  });
});
