import 'reflect-metadata';
import { GranuleError } from '@granule/core';
import { loadConfigStoreConfig } from './config/config.service';
import { openConfigDatabase } from './persistence/database';

/**
 * `npm run migrate`: runs every pending migration of the Granule database (event store and
 * config-store) in one transaction, then exits. The Helm chart runs it as a Job.
 */
async function migrate(): Promise<void> {
  const config = loadConfigStoreConfig(process.env);
  const ds = await openConfigDatabase(config.databaseUrl, {
    create: config.createDatabase,
    runMigrations: true,
    onMigrated: (ran) =>
      process.stdout.write(ran.length > 0 ? `migrated: ${ran.join(', ')}\n` : 'migrations: up to date\n'),
  });
  await ds.destroy();
}

migrate().catch((err: unknown) => {
  const message =
    err instanceof GranuleError
      ? err.message
      : `internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`;
  for (const line of message.split('\n')) process.stderr.write(`migrate: ${line}\n`);
  process.exit(1);
});
