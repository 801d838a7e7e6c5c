import { GranuleError } from '@granule/core';

/**
 * Runs a service's `main` and turns a failure into one line on stderr and exit code 1:
 * what is wrong and what to do, never a stack trace (GRANULE_DEBUG=1 adds it).
 */
export function runService(name: string, main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    const message =
      err instanceof GranuleError ? err.message : `internal error: ${err instanceof Error ? err.message : String(err)}`;
    process.stderr.write(`${name}: ${message}\n`);
    if (process.env.GRANULE_DEBUG === '1' && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
    process.exit(1);
  });
}

/**
 * Stops a running service on a failure it cannot go on from (NATS refusing its credential at a
 * reconnection): one line on stderr, exit code 1, for its supervisor to restart it.
 */
export function exitService(name: string, message: string): never {
  process.stderr.write(`${name}: ${message}\n`);
  process.exit(1);
}
