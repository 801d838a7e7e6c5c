import { plainToInstance } from 'class-transformer';
import type { ClassConstructor } from 'class-transformer';
import { validateSync } from 'class-validator';
import { GranuleError, redactUrl } from '@granule/core';

export { redactUrl };

/** The configuration is unusable; the message names every bad variable (`problems`, one each). */
export class ConfigError extends GranuleError<'CONFIG_INVALID'> {
  constructor(readonly problems: string[]) {
    super('CONFIG_INVALID', `invalid configuration: ${problems.join('; ')}`);
  }
}

const BOOLEAN: Record<string, boolean> = { '1': true, true: true, yes: true, '0': false, false: false, no: false };

/**
 * How a config field is read: the variable's name, how its text becomes a value, and whether it
 * is a secret (a message then gives its length, never its value).
 */
export type EnvField = string | { name: string; type?: 'string' | 'number' | 'boolean' | 'list'; secret?: boolean };

/**
 * Reads a service's settings from the environment once: each field of `Config` from the variable
 * `fields` names, validated with the class's class-validator rules. A missing variable keeps
 * the class's default. Throws `ConfigError` naming every bad variable and what was found.
 */
export function loadEnvConfig<C extends object>(
  Config: ClassConstructor<C>,
  env: Record<string, string | undefined>,
  fields: Record<keyof C & string, EnvField>,
): C {
  const raw: Record<string, unknown> = {};
  const names: Record<string, string> = {};
  const secrets = new Set<string>();
  for (const [key, field] of Object.entries(fields) as [string, EnvField][]) {
    const name = typeof field === 'string' ? field : field.name;
    names[key] = name;
    if (typeof field !== 'string' && field.secret) secrets.add(key);
    const text = env[name];
    if (text === undefined || text.trim() === '') continue;
    const value = text.trim();
    const type = typeof field === 'string' ? 'string' : (field.type ?? 'string');
    if (type === 'number') raw[key] = /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
    else if (type === 'boolean') raw[key] = BOOLEAN[value.toLowerCase()] ?? value;
    else if (type === 'list')
      raw[key] = value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    else raw[key] = value;
  }
  const config = plainToInstance(Config, raw);
  const errors = validateSync(config);
  if (errors.length > 0) {
    const found = (key: string, value: unknown): string =>
      value === undefined
        ? 'it is not set'
        : secrets.has(key)
          ? `got ${String(value).length} characters`
          : `got ${typeof value === 'string' ? JSON.stringify(redactUrl(value)) : JSON.stringify(value)}`;
    // One problem per variable: decorators apply bottom-up, so the last failed constraint is the
    // top-most rule written, the most basic one ("required", "a number").
    const problems = errors.map((e) => {
      const message = Object.values(e.constraints ?? {}).at(-1) ?? 'is invalid';
      return `${names[e.property] ?? e.property}: ${message} (${found(e.property, e.value)})`;
    });
    throw new ConfigError(problems);
  }
  return config;
}
