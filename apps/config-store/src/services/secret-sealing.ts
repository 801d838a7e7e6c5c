import { InvalidInputError } from '@granule/core';
import {
  SECRETS_PUBLIC_KEY_VARIABLE,
  clearSecretDiagnostics,
  sealData,
  sealSettings,
  sealTaskRecords,
  type ClearSecret,
  type Seal,
  type ValuePath,
} from '@granule/task-model';

/** Where a value is, for the refusal that names it. */
export interface SealedAt {
  file?: string;
  prefix?: ValuePath;
}

/**
 * What the config-store stores is sealed first (ADR 0023): task parameters, settings and release
 * attributes that are secrets are sealed with the installation's public key before they reach
 * a table, and every reply and the planner get them sealed. Without the key, a secret in clear
 * is refused with each place named.
 */
export class SecretSealing {
  constructor(private readonly seal?: Seal) {}

  /** Task records (Fuel's format): their parameters by the task rule. */
  tasks<T>(records: readonly T[], at: SealedAt): T[] {
    const sealed = sealTaskRecords(records, this.seal);
    this.refuse(sealed.clear, at);
    return sealed.records;
  }

  settings(settings: Record<string, unknown>, at: SealedAt): Record<string, unknown> {
    const sealed = sealSettings(settings, this.seal);
    this.refuse(sealed.clear, at);
    return sealed.settings;
  }

  data<T>(data: T, at: SealedAt): T {
    const sealed = sealData(data, this.seal);
    this.refuse(sealed.clear, at);
    return sealed.data;
  }

  private refuse(clear: readonly ClearSecret[], at: SealedAt): void {
    if (clear.length === 0) return;
    throw new InvalidInputError(
      clearSecretDiagnostics(
        clear,
        at,
        `config-store seals secrets before it stores them and has no ${SECRETS_PUBLIC_KEY_VARIABLE}: start it with the installation's public key (granule secrets keygen prints a pair), or leave the value out`,
      ),
    );
  }
}
