import { InvalidInputError } from '@granule/core';
import type { ConfigStoreClient, PluginSourceFiles } from '@granule/config-store-client';
import { SecretSealer } from '@granule/secrets';
import {
  SECRETS_PUBLIC_KEY_VARIABLE,
  clearSecretDiagnostics,
  sealDataFileText,
  sealSettings,
  sealSettingsPatch,
  sealTaskDefinitions,
  sealTaskRecords,
  type ClearSecret,
  type Seal,
  type TaskDefinition,
  type ValuePath,
} from '@granule/task-model';
import { cliEnvironment } from '../cli-environment';

const DATA_FILE = /\.(ya?ml|json)$/i;

const NO_KEY = `granule seals secrets before they leave this machine and has no key to seal with: set ${SECRETS_PUBLIC_KEY_VARIABLE} to the installation's public key (granule secrets keygen prints a pair), or start config-store with it`;

/**
 * What the CLI sends is sealed first (ADR 0023): secrets in task parameters, settings and plugin
 * files leave this machine only sealed. The key is looked for only when something needs it:
 * `GRANULE_SECRETS_PUBLIC_KEY`, else the one config-store gives in its ping reply. Without one, a
 * secret in clear is refused, each named, and nothing is sent.
 */
export class CliSecrets {
  private sealer?: Promise<SecretSealer | undefined>;

  constructor(private readonly configStore?: ConfigStoreClient) {}

  /** The public key in use, if any (env first, then config-store). */
  async publicKey(): Promise<string | undefined> {
    return (await this.findSealer())?.publicKey;
  }

  taskDefinitions(tasks: TaskDefinition[], file: string): Promise<TaskDefinition[]> {
    return this.sealed((seal) => {
      const r = sealTaskDefinitions(tasks, seal);
      return { value: r.tasks, clear: r.clear };
    }, file);
  }

  taskRecords<T>(records: T[], file: string): Promise<T[]> {
    return this.sealed((seal) => {
      const r = sealTaskRecords(records, seal);
      return { value: r.records, clear: r.clear };
    }, file);
  }

  settings(settings: Record<string, unknown>, prefix: ValuePath = ['settings']): Promise<Record<string, unknown>> {
    return this.sealed(
      (seal) => {
        const r = sealSettings(settings, seal);
        return { value: r.settings, clear: r.clear };
      },
      undefined,
      prefix,
    );
  }

  settingsPatch(patch: Record<string, unknown>): Promise<Record<string, unknown>> {
    return this.sealed((seal) => {
      const r = sealSettingsPatch(patch, seal);
      return { value: r.patch, clear: r.clear };
    }, '--setting');
  }

  /** CLUSTER.yaml sent inline: its settings and its task overrides. */
  async cluster(cluster: Record<string, unknown>, file: string): Promise<Record<string, unknown>> {
    const out = { ...cluster };
    if (typeof out.settings === 'object' && out.settings !== null && !Array.isArray(out.settings))
      out.settings = await this.settings(out.settings as Record<string, unknown>);
    if (Array.isArray(out.tasks)) out.tasks = await this.taskRecords(out.tasks as unknown[], `${file}: tasks`);
    return out;
  }

  /** A plugin or release sent whole for install: every data file sealed in place (comments and lines kept). */
  async pluginFiles(body: PluginSourceFiles): Promise<PluginSourceFiles> {
    const files = { ...body.files };
    const clear: Array<{ file: string; secrets: ClearSecret[] }> = [];
    for (const [file, text] of Object.entries(files))
      if (DATA_FILE.test(file) && text !== '') {
        const found = sealDataFileText(file, text).clear;
        if (found.length > 0) clear.push({ file, secrets: found });
      }
    if (clear.length === 0) return body;
    const sealer = await this.findSealer();
    if (!sealer)
      throw new InvalidInputError(
        clear.flatMap((c) => clearSecretDiagnostics(c.secrets, { file: `${body.source}/${c.file}` }, NO_KEY)),
      );
    for (const { file } of clear)
      files[file] = sealDataFileText(`${body.source}/${file}`, files[file], sealer.seal).text;
    return { ...body, files };
  }

  private async sealed<T>(
    apply: (seal?: Seal) => { value: T; clear: ClearSecret[] },
    file?: string,
    prefix?: ValuePath,
  ): Promise<T> {
    const found = apply();
    if (found.clear.length === 0) return found.value;
    const sealer = await this.findSealer();
    if (!sealer)
      throw new InvalidInputError(
        clearSecretDiagnostics(found.clear, { ...(file ? { file } : {}), ...(prefix ? { prefix } : {}) }, NO_KEY),
      );
    return apply(sealer.seal).value;
  }

  private findSealer(): Promise<SecretSealer | undefined> {
    this.sealer ??= (async () => {
      const fromEnv = cliEnvironment[SECRETS_PUBLIC_KEY_VARIABLE];
      if (fromEnv) return new SecretSealer(fromEnv.trim());
      if (!this.configStore) return undefined;
      try {
        const key = (await this.configStore.request('ping', {})).secrets_public_key;
        return key ? new SecretSealer(key) : undefined;
      } catch {
        return undefined; // no config-store: only the variable can give the key
      }
    })();
    return this.sealer;
  }
}
