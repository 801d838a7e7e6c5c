import { CommanderError } from 'commander';
import { GranuleError, InvalidInputError, UsageError, escapeControlCharacters } from '@granule/core';
import { renderFinding } from './messages';

/** Exit codes are part of the CLI contract: 0 ok, 1 invalid input, 2 usage error. */
export const EXIT_OK = 0;
export const EXIT_INVALID = 1;
export const EXIT_USAGE = 2;
export const EXIT_INTERNAL = 3;

export function exitCodeFor(err: unknown): number {
  if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
  if (err instanceof UsageError) return EXIT_USAGE;
  if (err instanceof InvalidInputError) return EXIT_INVALID;
  if (err instanceof GranuleError) return EXIT_INVALID;
  return EXIT_INTERNAL;
}

/**
 * Prints an error for a person: messages only, a stack trace only with GRANULE_DEBUG=1. Invalid
 * input prints its findings one per line, errors first, then the warnings that came with them
 * (a plugin refused by `plan` reads as `plugin validate` reports it).
 */
export function reportError(err: unknown, debug: boolean, json = false): void {
  if (err instanceof CommanderError && err.exitCode === 0) return; // --help, --version
  if (json) {
    process.stderr.write(`${JSON.stringify({ error: errorObject(err) })}\n`);
    if (debug && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
    return;
  }
  if (err instanceof CommanderError) return; // commander already printed it
  // Messages can quote what a service or a file sent: never pass its control bytes on.
  if (err instanceof InvalidInputError && err.diagnostics.some((d) => d.severity === 'error')) {
    for (const severity of ['error', 'warning'] as const)
      for (const d of err.diagnostics)
        if (d.severity === severity) process.stderr.write(`${escapeControlCharacters(renderFinding(d))}\n`);
  } else if (err instanceof GranuleError) {
    process.stderr.write(`error: ${escapeControlCharacters(err.message).replace(/\n/g, '\nerror: ')}\n`);
  } else {
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`internal error: ${escapeControlCharacters(message)}\n`);
  }
  if (debug && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
}

/**
 * An error as data, for `-o json`: `{code, message, diagnostics?}`, the reply envelope's error
 * shape. A usage error (commander's too) is `USAGE`; anything unexpected `INTERNAL`.
 */
export function errorObject(err: unknown): { code: string; message: string; diagnostics?: unknown[] } {
  if (err instanceof CommanderError) return { code: 'USAGE', message: err.message.replace(/^error: /, '') };
  if (err instanceof InvalidInputError)
    return {
      code: err.code,
      message: err.diagnostics.map((d) => renderFinding(d).replace(/^(error|warning): /, '')).join('\n'),
      diagnostics: err.diagnostics,
    };
  if (err instanceof GranuleError) return { code: err.code, message: err.message };
  return { code: 'INTERNAL', message: err instanceof Error ? err.message : String(err) };
}

/** True when the command line asks for JSON output (`-o json`, `--output json`, `-ojson`, `--output=json`). */
export function wantsJson(argv: readonly string[]): boolean {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if ((a === '-o' || a === '--output') && argv[i + 1] === 'json') return true;
    if (a === '-ojson' || a === '--output=json') return true;
  }
  return false;
}
