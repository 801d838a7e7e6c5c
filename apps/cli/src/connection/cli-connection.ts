import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { parse } from 'yaml';
import { InvalidInputError } from '@granule/core';
import { DEFAULT_SUBJECT_PREFIX } from '@granule/contracts';
import { ConfigStoreClient, DEFAULT_NATS_URL, connectNats } from '@granule/config-store-client';

/** Where the CLI's config file lives: `$XDG_CONFIG_HOME/granule/config.yaml`, else `~/.config/granule/config.yaml`. */
export function cliConfigPath(env: Record<string, string | undefined>): string {
  return path.join(env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config'), 'granule', 'config.yaml');
}

/** The CLI config file's settings (`nats_url`, `subject_prefix`). */
export interface CliConfigFile {
  nats_url?: string;
  subject_prefix?: string;
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
    throw new InvalidInputError([
      {
        severity: 'error',
        code: 'CLI_CONFIG_BAD',
        file,
        message: 'expected a mapping with nats_url (and subject_prefix)',
      },
    ]);
  const doc = data as Record<string, unknown>;
  const out: CliConfigFile = {};
  for (const key of ['nats_url', 'subject_prefix'] as const) {
    if (doc[key] === undefined) continue;
    if (typeof doc[key] !== 'string')
      throw new InvalidInputError([
        {
          severity: 'error',
          code: 'CLI_CONFIG_BAD',
          file,
          path: key,
          message: `expected a string, got ${JSON.stringify(doc[key])}`,
        },
      ]);
    out[key] = doc[key] as string;
  }
  return out;
}

/** Connection settings and where each came from (for messages). */
export interface ConnectionSettings {
  natsUrl: string;
  subjectPrefix: string;
}

/** Flags beat the environment, which beats the config file, which beats the defaults. */
export function resolveConnection(
  flags: { natsUrl?: string; subjectPrefix?: string },
  env: Record<string, string | undefined>,
  file: CliConfigFile,
): ConnectionSettings {
  return {
    natsUrl: flags.natsUrl || env.GRANULE_NATS_URL || file.nats_url || DEFAULT_NATS_URL,
    subjectPrefix: flags.subjectPrefix || env.GRANULE_SUBJECT_PREFIX || file.subject_prefix || DEFAULT_SUBJECT_PREFIX,
  };
}

/** Adds `--nats-url` and `--subject-prefix` to a command that talks to a service. */
export function addConnectionOptions(cmd: Command): Command {
  return cmd
    .option(
      '--nats-url <url>',
      `NATS server; default: $GRANULE_NATS_URL, else nats_url in ~/.config/granule/config.yaml, else ${DEFAULT_NATS_URL}`,
    )
    .option(
      '--subject-prefix <prefix>',
      `first subject token; default: $GRANULE_SUBJECT_PREFIX, else ${DEFAULT_SUBJECT_PREFIX}`,
    );
}

/** Connects as the flags, environment and config file say, runs `fn` with a config-store client, and disconnects. */
export async function withConfigStore<T>(
  flags: { natsUrl?: string; subjectPrefix?: string },
  fn: (client: ConfigStoreClient) => Promise<T>,
): Promise<T> {
  const file = await readCliConfigFile(cliConfigPath(process.env));
  const settings = resolveConnection(flags, process.env, file);
  const nc = await connectNats(settings.natsUrl, { name: 'granule-cli' });
  try {
    return await fn(new ConfigStoreClient(nc, { prefix: settings.subjectPrefix }));
  } finally {
    await nc.close();
  }
}
