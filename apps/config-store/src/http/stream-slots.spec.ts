import { StreamSlots, TooManyStreamsError } from './stream-slots';

describe('StreamSlots', () => {
  it('refuses a caller over its own limit while others still get streams', () => {
    const slots = new StreamSlots({ total: 5, perCaller: 2 });
    slots.take('alice');
    slots.take('alice');
    expect(() => slots.take('alice')).toThrow(
      "caller 'alice' has 2 streams open, the most one caller may (GRANULE_HTTP_MAX_STREAMS_PER_CALLER=2): close one, or try again in 5 s",
    );
    slots.take('bob');
    expect([slots.count(), slots.count('alice'), slots.count('bob')]).toEqual([3, 2, 1]);
  });

  it('refuses everyone once the total is reached, and takes again when a stream is given back', () => {
    const slots = new StreamSlots({ total: 2, perCaller: 2 });
    const first = slots.take('alice');
    slots.take('bob');
    let refusal: unknown;
    try {
      slots.take('carol');
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(TooManyStreamsError);
    expect(refusal).toMatchObject({
      code: 'TOO_MANY_STREAMS',
      message: '2 streams are open, the most config-store serves (GRANULE_HTTP_MAX_STREAMS=2): try again in 5 s',
    });
    first();
    expect(() => slots.take('carol')).not.toThrow();
    expect(slots.count()).toBe(2);
  });

  it('a slot given back twice is counted once', () => {
    const slots = new StreamSlots({ total: 3, perCaller: 3 });
    const release = slots.take('alice');
    slots.take('alice');
    release();
    release();
    expect([slots.count(), slots.count('alice')]).toEqual([1, 1]);
  });
});
