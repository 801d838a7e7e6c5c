import { ValidateBy, ValidateIf } from 'class-validator';
import type { ValidationOptions } from 'class-validator';
import { IDENTIFIER_RULES, identifierProblem, jsonBytes, overLimitMessage, utf8Bytes } from '@granule/core';
import type { IdentifierKind } from '@granule/core';

// class-validator decorators for Granule's identifier rules and size bounds (INPUT_LIMITS in
// @granule/core): the messages name the rule, or the bound and the size found.

/**
 * The field may be left out; when present, the validators after it apply. Unlike
 * class-validator's `@IsOptional()`, which also skips `null`, a `null` is checked like any other
 * value: `{"name": null}` is refused with the field's own message instead of reaching the
 * database as "match NULL" (an HTTP 500 once). Use `@IsOptional()` only where `null` means
 * something (a node's `rack: null` clears it).
 */
export function Optional(options?: ValidationOptions): PropertyDecorator {
  return ValidateIf((_object, value) => value !== undefined, options);
}

/** The value keeps the identifier rule of `kind`; the message states the rule. */
export function IsIdentifier(kind: IdentifierKind, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: `isIdentifier:${kind}`,
      validator: {
        validate: (value) => identifierProblem(kind, value) === undefined,
        defaultMessage: (a) => identifierProblem(kind, a?.value) ?? IDENTIFIER_RULES[kind].rule,
      },
    },
    options,
  );
}

/** A string of at most `limit` bytes in UTF-8. */
export function MaxBytes(limit: number, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'maxBytes',
      validator: {
        validate: (value) => typeof value !== 'string' || utf8Bytes(value) <= limit,
        defaultMessage: (a) => overLimitMessage(limit, utf8Bytes(String(a?.value ?? '')), 'bytes'),
      },
    },
    options,
  );
}

/** An object or list of at most `limit` bytes as JSON. */
export function MaxJsonBytes(limit: number, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'maxJsonBytes',
      validator: {
        validate: (value) => jsonBytes(value) <= limit,
        defaultMessage: (a) => overLimitMessage(limit, jsonBytes(a?.value), 'bytes', 'as JSON'),
      },
    },
    options,
  );
}

/** A list of at most `limit` entries. */
export function MaxItems(limit: number, what: string, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'maxItems',
      validator: {
        validate: (value) => !Array.isArray(value) || value.length <= limit,
        defaultMessage: (a) => overLimitMessage(limit, Array.isArray(a?.value) ? a.value.length : 0, what),
      },
    },
    options,
  );
}
