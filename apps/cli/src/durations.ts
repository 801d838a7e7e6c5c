import { durationSeconds, UsageError } from '@granule/core';

/** `90d`, `12h`, `30m`, `45s` or plain seconds, as seconds. */
export function parseDuration(value: string, flag: string): number {
  const seconds = durationSeconds(value);
  if (!seconds) throw new UsageError(`${flag} ${value}: expected a positive duration such as 90d, 12h, 30m or 3600s`);
  return seconds;
}

/**
 * A point in time for a filter: a duration back from `now` (`2h`, `7d`), or a date or date and
 * time (`2026-11-25`, `2026-11-25T10:00:00Z`; a date alone is its midnight, UTC).
 */
export function parseTimePoint(value: string, flag: string, now = new Date()): Date {
  if (/^\d+[smhd]$/.test(value.trim())) return new Date(now.getTime() - parseDuration(value, flag) * 1000);
  const at = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value.trim())
    ? new Date(value.trim())
    : undefined;
  if (!at || Number.isNaN(at.getTime()))
    throw new UsageError(
      `${flag} ${value}: expected a duration back from now (30m, 2h, 7d) or a date (2026-11-25, 2026-11-25T10:00:00Z)`,
    );
  return at;
}
