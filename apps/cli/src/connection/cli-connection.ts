import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Command } from 'commander';
import { parse } from 'yaml';
import { InvalidInputError } from '@granule/core';
import { ConfigStoreClient } from '@granule/config-store-client';
import { connectNats } from '@granule/messaging';
import { loadEnvConfig, NATS_ENV, NatsSettings } from '@granule/service-kit/config';
import { cliEnvironment } from '../cli-environment';

/** Where the CLI's config file lives: `$XDG_CONFIG_HOME/granule/config.yaml`, else `~/.config/granule/config.yaml`. */
export function cliConfigPath(env: Record<string, string | undefined>): string {
  return path.join(env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config'), 'granule', 'config.yaml');
}

/** The connection keys a config file or context may set, and the variable each stands for. */
const FILE_KEYS = {
  nats_url: NATS_ENV.natsUrl,
  subject_prefix: NATS_ENV.subjectPrefix,
  nats_creds: NATS_ENV.natsCreds,
  nats_tls_ca: NATS_ENV.natsTlsCa,
  nats_tls_cert: NATS_ENV.natsTlsCert,
  nats_tls_key: NATS_ENV.natsTlsKey,
} as const;
type FileKey = keyof typeof FILE_KEYS;

/** One installation the operator talks to: where NATS is and with which credential. */
export type CliContext = Partial<Record<FileKey, string>>;

/**
 * The CLI config file: connection keys at the top (one installation), or `contexts` by name
 * (like kubectl's) with `current_context` naming the one to use when no `--context` is given.
 */
export interface CliConfigFile extends CliContext {
  current_context?: string;
  contexts?: Record<string, CliContext>;
}

function fileError(file: string, message: string, key?: string): InvalidInputError {
  return new InvalidInputError([
    { severity: 'error', code: 'CLI_CONFIG_BAD', file, ...(key ? { path: key } : {}), message },
  ]);
}

function readContext(file: string, doc: Record<string, unknown>, where: string): CliContext {
  const out: CliContext = {};
  for (const key of Object.keys(FILE_KEYS) as FileKey[]) {
    if (doc[key] === undefined) continue;
    if (typeof doc[key] !== 'string')
      throw fileError(file, `expected a string, got ${JSON.stringify(doc[key])}`, `${where}${key}`);
    out[key] = doc[key] as string;
  }
  return out;
}

/** Reads the config file; a missing file is no settings, a broken one an error naming the file and key. */
export async function readCliConfigFile(file: string): Promise<CliConfigFile> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return {};
  }
  let data: unknown;
  try {
    data = parse(text);
  } catch (err) {
    throw new InvalidInputError([
      {
        severity: 'error',
        code: 'CLI_CONFIG_SYNTAX',
        file,
        message: `YAML syntax error: ${(err as Error).message.split('\n')[0]}`,
      },
    ]);
  }
  if (data === null || data === undefined) return {};
  if (typeof data !== 'object' || Array.isArray(data))
    throw fileError(file, 'expected a mapping with nats_url (and subject_prefix, nats_creds), or contexts');
  const doc = data as Record<string, unknown>;
  const out: CliConfigFile = readContext(file, doc, '');
  if (doc.current_context !== undefined) {
    if (typeof doc.current_context !== 'string')
      throw fileError(file, `expected a context name, got ${JSON.stringify(doc.current_context)}`, 'current_context');
    out.current_context = doc.current_context;
  }
  if (doc.contexts !== undefined) {
    if (typeof doc.contexts !== 'object' || doc.contexts === null || Array.isArray(doc.contexts))
      throw fileError(file, 'expected a mapping of context names to settings', 'contexts');
    out.contexts = {};
    for (const [name, ctx] of Object.entries(doc.contexts as Record<string, unknown>)) {
      if (typeof ctx !== 'object' || ctx === null || Array.isArray(ctx))
        throw fileError(file, 'expected a mapping with nats_url, subject_prefix, nats_creds, ...', `contexts.${name}`);
      out.contexts[name] = readContext(file, ctx as Record<string, unknown>, `contexts.${name}.`);
    }
  }
  return out;
}

/** What the CLI connects with: service-kit's NATS settings. */
export type ConnectionSettings = NatsSettings;

/** Connection flags every command that talks to the services takes. */
export interface ConnectionFlags {
  natsUrl?: string;
  subjectPrefix?: string;
  context?: string;
  creds?: string;
}

/**
 * Flags beat the environment, which beats the config file's context (`--context`, else its
 * `current_context`, else its top-level keys), which beats the defaults. Validated by the same
 * rules as the services' (service-kit's `NatsSettings`).
 */
export function resolveConnection(
  flags: ConnectionFlags,
  env: Record<string, string | undefined>,
  file: CliConfigFile,
  configPath = 'the CLI config file',
): ConnectionSettings {
  const name = flags.context ?? env.GRANULE_CONTEXT ?? file.current_context;
  let context: CliContext = file;
  if (name !== undefined) {
    const found = file.contexts?.[name];
    if (!found)
      throw fileError(
        configPath,
        `no context '${name}' (contexts: ${Object.keys(file.contexts ?? {}).join(', ') || 'none'})`,
        'contexts',
      );
    context = found;
  }
  const merged: Record<string, string | undefined> = {};
  for (const [key, variable] of Object.entries(FILE_KEYS)) merged[variable] = context[key as FileKey];
  for (const variable of Object.values(NATS_ENV)) if (env[variable]) merged[variable] = env[variable];
  if (flags.natsUrl) merged[NATS_ENV.natsUrl] = flags.natsUrl;
  if (flags.subjectPrefix) merged[NATS_ENV.subjectPrefix] = flags.subjectPrefix;
  if (flags.creds) merged[NATS_ENV.natsCreds] = flags.creds;
  return loadEnvConfig(NatsSettings, merged, NATS_ENV);
}

/** Adds the connection flags to a command that talks to a service. */
export function addConnectionOptions(cmd: Command): Command {
  return cmd
    .option(
      '--nats-url <url>',
      'NATS server; default: $GRANULE_NATS_URL, else nats_url of the context in ~/.config/granule/config.yaml, else nats://127.0.0.1:4222',
    )
    .option('--subject-prefix <prefix>', 'first subject token; default: $GRANULE_SUBJECT_PREFIX, else granule')
    .option(
      '--context <name>',
      'a context of ~/.config/granule/config.yaml; default: $GRANULE_CONTEXT, else current_context',
    )
    .option(
      '--creds <file>',
      'NATS credentials (.creds); default: $GRANULE_NATS_CREDS, else nats_creds of the context',
    );
}

/** The connection settings of this invocation: flags, environment, config file (the CLI's one reader of them). */
export async function connectionSettings(flags: ConnectionFlags): Promise<ConnectionSettings> {
  const configPath = cliConfigPath(cliEnvironment);
  return resolveConnection(flags, cliEnvironment, await readCliConfigFile(configPath), configPath);
}

/** Connects as the flags, environment and config file say, runs `fn` with a config-store client, and disconnects. */
export async function withConfigStore<T>(
  flags: ConnectionFlags,
  fn: (client: ConfigStoreClient, nc: NatsConnection) => Promise<T>,
): Promise<T> {
  const settings = await connectionSettings(flags);
  const nc = await connectNats(settings, 'granule-cli');
  try {
    return await fn(new ConfigStoreClient(nc, { prefix: settings.subjectPrefix }), nc);
  } finally {
    await nc.close();
  }
}
