import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { GranuleError } from '@granule/core';
import { redactUrl } from '../config/config.service';
import { ALL_MIGRATIONS } from '../migrations';
import { CONFIG_STORE_ENTITIES } from './config-store.entities';

/** PostgreSQL cannot be reached or refuses us; the message is one line that says what to do. */
export class DatabaseUnavailableError extends GranuleError<'DATABASE_UNAVAILABLE'> {
  constructor(message: string, cause: unknown) {
    super('DATABASE_UNAVAILABLE', message, { cause });
  }
}

interface PgErrorLike {
  code?: string;
  message?: string;
  errors?: PgErrorLike[];
}

function reason(err: unknown): { code?: string; text: string } {
  const e = (err ?? {}) as PgErrorLike;
  const inner = e.errors?.[0] ?? e;
  switch (inner.code) {
    case 'ECONNREFUSED':
      return { code: inner.code, text: 'connection refused' };
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return { code: inner.code, text: 'unknown host' };
    case 'ETIMEDOUT':
      return { code: inner.code, text: 'timed out' };
    default:
      return { code: e.code ?? inner.code, text: (e.message ?? inner.message ?? String(err)).split('\n')[0] };
  }
}

/** Explains a failed connection in one line, naming the URL (password hidden) and what to do. */
export function describeConnectionFailure(url: string, err: unknown): DatabaseUnavailableError {
  const r = reason(err);
  const at = `cannot connect to PostgreSQL at ${redactUrl(url)}`;
  if (r.code === '3D000') return new DatabaseUnavailableError(`${at}: ${r.text} — create it, or set GRANULE_DATABASE_CREATE=true or GRANULE_DATABASE_URL`, err);
  if (r.code === '28P01' || r.code === '28000') return new DatabaseUnavailableError(`${at}: ${r.text} — fix the user or password in GRANULE_DATABASE_URL`, err);
  return new DatabaseUnavailableError(`${at}: ${r.text} — start it or set GRANULE_DATABASE_URL`, err);
}

/** A DataSource for the Granule database with the config-store's entities and every migration. */
export function createDataSource(url: string): DataSource {
  return new DataSource({
    type: 'postgres',
    url,
    entities: CONFIG_STORE_ENTITIES,
    migrations: ALL_MIGRATIONS,
    synchronize: false,
    logging: false,
    extra: { connectionTimeoutMillis: 5000 },
  });
}

async function createDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString(), connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
  } catch (err) {
    // Another replica created it first.
    if ((err as PgErrorLike).code !== '42P04') throw err;
  } finally {
    await client.end();
  }
}

/**
 * Connects to PostgreSQL (creating the database first when it is missing and `create` is
 * set). Throws `DatabaseUnavailableError` with a one-line explanation on failure.
 */
export async function openDatabase(url: string, options: { create: boolean }): Promise<DataSource> {
  let ds = createDataSource(url);
  try {
    await ds.initialize();
  } catch (err) {
    if (reason(err).code !== '3D000' || !options.create) throw describeConnectionFailure(url, err);
    try {
      await createDatabase(url);
      ds = createDataSource(url);
      await ds.initialize();
    } catch (again) {
      throw describeConnectionFailure(url, again);
    }
  }
  return ds;
}
