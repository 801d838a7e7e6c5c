import { ConfigError, loadGraphPlannerConfig, redactUrl } from './graph-planner.config';

describe('loadGraphPlannerConfig', () => {
  it('defaults - local NATS and PostgreSQL, prefix granule, no migrations', () => {
    expect({ ...loadGraphPlannerConfig({}) }).toEqual({
      natsUrl: 'nats://127.0.0.1:4222',
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/granule',
      subjectPrefix: 'granule',
      runMigrations: false,
    });
  });

  it('reads every GRANULE_* variable', () => {
    const config = loadGraphPlannerConfig({
      GRANULE_NATS_URL: 'nats://a:4222,nats://b:4222',
      GRANULE_DATABASE_URL: 'postgresql://u:p@db/g',
      GRANULE_SUBJECT_PREFIX: 'staging.granule',
      GRANULE_RUN_MIGRATIONS: '1',
    });
    expect({ ...config }).toEqual({ natsUrl: 'nats://a:4222,nats://b:4222', databaseUrl: 'postgresql://u:p@db/g', subjectPrefix: 'staging.granule', runMigrations: true });
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
      'invalid configuration: GRANULE_NATS_URL must be a nats:// URL (or a comma-separated list of them) (got "http://x"); GRANULE_DATABASE_URL must be a postgres:// URL (got "mysql://x")',
    );
  });

  it('redactUrl hides the password only', () => {
    expect(redactUrl('postgres://user:secret@db:5432/granule')).toBe('postgres://user:***@db:5432/granule');
    expect(redactUrl('postgres://postgres@127.0.0.1:5432/granule')).toBe('postgres://postgres@127.0.0.1:5432/granule');
  });
});
