import { parseDuration, parseTimePoint } from './durations';

describe('durations and points in time', () => {
  const now = new Date('2026-11-25T12:00:00Z');

  it('a duration back from now', () => {
    expect(parseTimePoint('2h', '--since', now).toISOString()).toBe('2026-11-25T10:00:00.000Z');
    expect(parseTimePoint('7d', '--since', now).toISOString()).toBe('2026-11-18T12:00:00.000Z');
    expect(parseDuration('90d', '--expires')).toBe(90 * 86_400);
  });

  it('a date is its midnight UTC; a date and time is that instant', () => {
    expect(parseTimePoint('2026-11-20', '--since', now).toISOString()).toBe('2026-11-20T00:00:00.000Z');
    expect(parseTimePoint('2026-11-20T08:30:00+02:00', '--until', now).toISOString()).toBe('2026-11-20T06:30:00.000Z');
  });

  it('anything else is a usage error naming the flag and what it takes', () => {
    expect(() => parseTimePoint('yesterday', '--since', now)).toThrow(
      '--since yesterday: expected a duration back from now (30m, 2h, 7d) or a date (2026-11-25, 2026-11-25T10:00:00Z)',
    );
    expect(() => parseTimePoint('2026-13-45', '--since', now)).toThrow('--since 2026-13-45: expected');
    expect(() => parseDuration('0d', '--expires')).toThrow('--expires 0d: expected a positive duration');
  });
});
