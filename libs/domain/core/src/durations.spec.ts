import { durationSeconds } from './durations';

describe('durationSeconds', () => {
  it('reads a number with s, m, h or d, or plain seconds', () => {
    expect(['45s', '30m', ' 12h ', '90d', '3600', '0h'].map(durationSeconds)).toEqual([
      45,
      1800,
      43_200,
      90 * 86_400,
      3600,
      0,
    ]);
  });

  it('is undefined for anything else', () => {
    expect(['', 'h', '2w', '-1h', '1.5h', '2 h', 'yesterday'].map(durationSeconds)).toEqual(Array(7).fill(undefined));
  });
});
