import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import type { ValidationError } from 'class-validator';
import { InvalidInputError, quoteFound, untrustedDataProblems } from '@granule/core';
import type { Diagnostic } from '@granule/core';

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return quoteFound(value);
}

function collect(errors: ValidationError[], parent: string, out: Diagnostic[]): void {
  for (const e of errors) {
    const path = parent === '' ? e.property : `${parent}.${e.property}`;
    // class-validator starts its messages with the property name; the path says it already.
    const messages = Object.values(e.constraints ?? {}).map((m) =>
      m.startsWith(`${e.property} `) ? m.slice(e.property.length + 1) : m,
    );
    if (messages.length > 0) {
      const message = messages.some((m) => m.includes('should not exist'))
        ? `unknown field '${e.property}'`
        : messages.every((m) => m.includes(', got '))
          ? messages.join('; ')
          : `${messages.join('; ')} (got ${describe(e.value)})`;
      out.push({ severity: 'error', code: 'CONFIG_BAD_FIELD', path, message });
    }
    collect(e.children ?? [], path, out);
  }
}

/**
 * Checks a request payload against its class-validator class. Returns the typed instance, or
 * throws `InvalidInputError` naming every bad field, what was expected and what was found.
 * Unknown fields are refused too (a typo must not pass silently).
 */
export function validatePayload<T extends object>(cls: new () => T, payload: unknown): T {
  if (payload === undefined || payload === null) payload = {};
  if (typeof payload !== 'object' || Array.isArray(payload)) {
    throw new InvalidInputError([
      { severity: 'error', code: 'CONFIG_BAD_PAYLOAD', message: `expected a JSON object, got ${describe(payload)}` },
    ]);
  }
  // Checked before class-transformer walks the payload: it recurses per level, so a 50,000-deep
  // body would overflow the stack, and a `__proto__` key must never reach a merge.
  const unsafe = untrustedDataProblems(payload);
  if (unsafe.length > 0) throw new InvalidInputError(unsafe);
  const instance = plainToInstance(cls, payload);
  const errors = validateSync(instance, { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: false });
  const diagnostics: Diagnostic[] = [];
  collect(errors, '', diagnostics);
  if (diagnostics.length > 0) throw new InvalidInputError(diagnostics);
  return instance;
}
