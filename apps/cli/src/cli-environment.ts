/**
 * The environment the CLI reads, read once here (its one reader of `process.env`): NATS settings
 * (`GRANULE_NATS_*`, `GRANULE_SUBJECT_PREFIX`, `GRANULE_CONTEXT`), where its config file is
 * (`XDG_CONFIG_HOME`), the trust store (`GRANULE_AUTH_DIR`) and `GRANULE_DEBUG`.
 */
export const cliEnvironment: Readonly<Record<string, string | undefined>> = Object.freeze({ ...process.env });

/** `GRANULE_DEBUG=1`: stack traces with internal errors. */
export const debugEnabled = (): boolean => cliEnvironment.GRANULE_DEBUG === '1';
