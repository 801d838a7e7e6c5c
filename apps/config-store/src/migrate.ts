import 'reflect-metadata';
import { GranuleError } from '@granule/core';
import { ConfigService } from './config/config.service';
import { openDatabase } from './persistence/database';

/**
 * `npm run migrate`: runs every pending migration of the Granule database (event store and
 * config-store) in one transaction, then exits. The Helm chart runs it as a Job.
 */
async function migrate(): Promise<void> {
  const { config } = ConfigService.fromEnvironment();
  const ds = await openDatabase(config.databaseUrl, { create: config.createDatabase });
  try {
    const ran = await ds.runMigrations({ transaction: 'all' });
    process.stdout.write(ran.length > 0 ? `migrated: ${ran.map((m) => m.name).join(', ')}\n` : 'migrations: up to date\n');
  } finally {
    await ds.destroy();
  }
}

migrate().catch((err: unknown) => {
  const message = err instanceof GranuleError ? err.message : `internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`;
  for (const line of message.split('\n')) process.stderr.write(`migrate: ${line}\n`);
  process.exit(1);
});
