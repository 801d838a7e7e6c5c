import { comparePositions, START_POSITION } from './position';

describe('comparePositions', () => {
  it('orders by transaction id first, then global position, as numbers not strings', () => {
    const a = { transactionId: '9', globalPosition: '100' };
    const b = { transactionId: '10', globalPosition: '2' };
    expect(comparePositions(a, b)).toBe(-1);
    expect(comparePositions(b, a)).toBe(1);
    expect(comparePositions({ transactionId: '10', globalPosition: '3' }, b)).toBe(1);
    expect(comparePositions(b, { ...b })).toBe(0);
    expect(comparePositions(START_POSITION, a)).toBe(-1);
  });
});
