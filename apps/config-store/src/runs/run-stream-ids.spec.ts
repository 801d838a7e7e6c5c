import { InvalidInputError } from '@granule/core';
import { eventStreamId, parseEventStreamId, parseLogRecordId } from './run-stream-ids';

describe('run stream ids', () => {
  it('an event id - the versions from the run down to the event, dot-separated, both ways', () => {
    expect(eventStreamId([12])).toBe('12');
    expect(eventStreamId([7, 3])).toBe('7.3');
    expect(parseEventStreamId('7.3', 'Last-Event-ID')).toEqual([7, 3]);
    expect(parseEventStreamId(' 12 ', 'after')).toEqual([12]);
  });

  it.each(['', 'x', '7.', '.3', '7..3', '-1', '1.2.3.4.5.6.7.8.9', '1e3'])(
    'refuses the event id %j naming where it came from',
    (value) => {
      let err: unknown;
      try {
        parseEventStreamId(value, 'Last-Event-ID');
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(InvalidInputError);
      expect((err as Error).message).toBe(
        `Last-Event-ID: expected an event id such as 12 or 7.3 (versions, dot-separated), got ${JSON.stringify(value)}`,
      );
    },
  );

  it('a log record id - digits only', () => {
    expect(parseLogRecordId('1042', 'after')).toBe('1042');
    expect(() => parseLogRecordId('10-42', 'after')).toThrow('after: expected a log record id (digits), got "10-42"');
    expect(() => parseLogRecordId('1'.repeat(20), 'after')).toThrow(/^after: expected a log record id/);
  });
});
