const UNIT_SECONDS = { '': 1, s: 1, m: 60, h: 3600, d: 86_400 } as const;

/**
 * `90d`, `12h`, `30m`, `45s` or plain seconds, as seconds (zero included); undefined for
 * anything else. The one reading of durations: the CLI's flags and the run queries' filters.
 */
export function durationSeconds(text: string): number | undefined {
  const m = /^(\d+)([smhd]?)$/.exec(text.trim());
  return m ? Number(m[1]) * UNIT_SECONDS[m[2] as keyof typeof UNIT_SECONDS] : undefined;
}
