import type { Position } from './event-store.types';

/** The position before the first event of the log. */
export const START_POSITION: Readonly<Position> = Object.freeze({ transactionId: '0', globalPosition: '0' });

/** Orders positions as `readAll` does: by transaction id, then global position. */
export function comparePositions(a: Position, b: Position): number {
  const tx = BigInt(a.transactionId) - BigInt(b.transactionId);
  if (tx !== 0n) return tx < 0n ? -1 : 1;
  const pos = BigInt(a.globalPosition) - BigInt(b.globalPosition);
  return pos === 0n ? 0 : pos < 0n ? -1 : 1;
}
