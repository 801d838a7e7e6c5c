import type { Command } from 'commander';
import { InvalidInputError } from '@granule/core';
import { SecretSealer, generateSecretsKeyPair } from '@granule/secrets';
import { SECRETS_KEY_VARIABLE, SECRETS_PUBLIC_KEY_VARIABLE } from '@granule/task-model';
import { addConnectionOptions, withConfigStore } from '../connection';
import { cliEnvironment } from '../cli-environment';
import { CliSecrets } from '../inputs/seal-inputs';
import { parseFormat, toJson, toYaml, writeOut } from '../output';

interface SealOptions {
  natsUrl?: string;
  subjectPrefix?: string;
  output: string;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** `granule secrets keygen|seal` — the installation's key pair for sealed secrets (ADR 0023). */
export function registerSecretsCommand(program: Command): void {
  const secrets = program
    .command('secrets')
    .description('the key pair that seals task and setting secrets; sealing a value by hand');

  secrets
    .command('keygen')
    .description(
      `prints a new key pair: ${SECRETS_KEY_VARIABLE} (the private key: the orchestrator only) and ${SECRETS_PUBLIC_KEY_VARIABLE} (config-store, the CLI)`,
    )
    .option('-o, --output <format>', 'text (VARIABLE=value lines) | json | yaml', 'text')
    .addHelpText('after', '\nExamples:\n  granule secrets keygen > secrets.env\n  granule secrets keygen -o json\n')
    .action(async (opts: { output: string }) => {
      const format = parseFormat(opts.output, ['text', 'json', 'yaml'] as const);
      const pair = generateSecretsKeyPair();
      const vars = { [SECRETS_KEY_VARIABLE]: pair.secretKey, [SECRETS_PUBLIC_KEY_VARIABLE]: pair.publicKey };
      await writeOut(
        format === 'json'
          ? toJson(vars)
          : format === 'yaml'
            ? toYaml(vars)
            : Object.entries(vars)
                .map(([k, v]) => `${k}=${v}\n`)
                .join(''),
      );
      if (process.stderr.isTTY)
        process.stderr.write(
          `keep ${SECRETS_KEY_VARIABLE} secret: only the orchestrator needs it (a Kubernetes Secret); give ${SECRETS_PUBLIC_KEY_VARIABLE} to config-store and the CLI\n`,
        );
    });

  addConnectionOptions(
    secrets
      .command('seal')
      .description(
        `seals the value read on stdin (a trailing newline is dropped) and prints {"$sealed": ...}, to write into a task or settings file; the key is ${SECRETS_PUBLIC_KEY_VARIABLE}, else the one config-store gives`,
      )
      .option('-o, --output <format>', 'json | yaml (to paste into a YAML task or settings file)', 'json')
      .addHelpText(
        'after',
        '\nExamples:\n  granule secrets seal < db-password.txt\n  granule secrets seal -o yaml < db-password.txt\n',
      ),
  ).action(async (opts: SealOptions) => {
    const format = parseFormat(opts.output, ['json', 'yaml'] as const);
    const value = (await readStdin()).replace(/\r?\n$/, '');
    const fromEnv = cliEnvironment[SECRETS_PUBLIC_KEY_VARIABLE];
    const key = fromEnv ?? (await withConfigStore(opts, (c) => new CliSecrets(c).publicKey()));
    if (!key)
      throw new InvalidInputError([
        {
          severity: 'error',
          code: 'SECRET_NOT_SEALED',
          message: `no key to seal with: set ${SECRETS_PUBLIC_KEY_VARIABLE}, or start config-store with it`,
        },
      ]);
    const sealed = new SecretSealer(key.trim()).seal(value);
    await writeOut(format === 'yaml' ? toYaml(sealed) : `${JSON.stringify(sealed)}\n`);
  });
}
