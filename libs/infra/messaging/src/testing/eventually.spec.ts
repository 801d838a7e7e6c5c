import { waitUntil } from './eventually';

describe('waitUntil', () => {
  it('returns the first truthy value of the condition', async () => {
    await expect(waitUntil(() => 'ready', 'the value')).resolves.toBe('ready');
    await expect(waitUntil(async () => ({ id: 7 }), 'the object')).resolves.toEqual({ id: 7 });
  });

  it('asks again until the condition holds', async () => {
    const answers = [undefined, false, 0, '', 'at last'];
    let calls = 0;
    const value = await waitUntil(() => answers[calls++] as string | undefined | false, 'the fifth answer', 1000, 1);
    expect(value).toBe('at last');
    expect(calls).toBe(5);
  });

  it('gives up after the timeout with an error that names what it waited for', async () => {
    let calls = 0;
    const waiting = waitUntil(
      () => {
        calls++;
        return false;
      },
      'the door to open',
      100,
      10,
    );
    await expect(waiting).rejects.toThrow(new Error('timed out after 100 ms waiting for the door to open'));
    expect(calls).toBeGreaterThan(1);
  });
});
