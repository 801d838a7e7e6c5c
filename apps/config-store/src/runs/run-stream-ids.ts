import { InvalidInputError } from '@granule/core';

/**
 * The `id:` of a run event on the events stream: the versions from the run followed down to the
 * event, dot-separated. `7` is event 7 of the run; `7.3` is event 3 of the phase run that the
 * run's event 7 (`StrategyPhaseStarted`) started. A client that reconnects with the last id it
 * saw (`Last-Event-ID`) gets what follows it, in the same order, nothing twice.
 */
export function eventStreamId(path: readonly number[]): string {
  return path.join('.');
}

function refused(what: string, message: string): InvalidInputError {
  return new InvalidInputError([{ severity: 'error', code: 'INVALID_INPUT', path: what, message }]);
}

/** The versions of an event stream id (`eventStreamId`); `what` names the header or parameter it came from. */
export function parseEventStreamId(value: string, what: string): number[] {
  const parts = value.trim().split('.');
  if (parts.length > 8 || !parts.every((p) => /^\d{1,15}$/.test(p)))
    throw refused(
      what,
      `expected an event id such as 12 or 7.3 (versions, dot-separated), got ${JSON.stringify(value)}`,
    );
  return parts.map(Number);
}

/** A task log record id (`TaskLogRecord.id`), the `id:` of the logs stream. */
export function parseLogRecordId(value: string, what: string): string {
  const id = value.trim();
  if (!/^\d{1,19}$/.test(id)) throw refused(what, `expected a log record id (digits), got ${JSON.stringify(value)}`);
  return id;
}
