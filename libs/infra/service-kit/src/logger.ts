import pino from 'pino';
import type { Logger } from 'pino';

/** JSON lines on stdout with the service name; callers add runId, task and node fields. */
export function createLogger(service: string, level = 'info'): Logger {
  return pino({ name: service, level, base: { service }, timestamp: pino.stdTimeFunctions.isoTime });
}

export type { Logger };
