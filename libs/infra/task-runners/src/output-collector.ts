import type { SecretMasker } from './secret-masker';
import type { OutputListener, OutputStream } from './task-runner.types';

const isContinuation = (byte: number): boolean => (byte & 0xc0) === 0x80;

/** Length of the UTF-8 sequence a lead byte starts (1 for ASCII and for invalid bytes). */
function sequenceLength(lead: number): number {
  if (lead >= 0xf0 && lead <= 0xf7) return 4;
  if (lead >= 0xe0) return 3;
  if (lead >= 0xc0) return 2;
  return 1;
}

/** Largest `n <= max` that does not cut a UTF-8 sequence of `buf` (falls back to `max`). */
function charBoundary(buf: Buffer, max: number): number {
  if (max >= buf.length) return buf.length;
  let n = max;
  while (n > 0 && isContinuation(buf[n])) n--;
  return n === 0 ? max : n;
}

/** Bytes at the end of `buf` that begin a UTF-8 sequence not yet complete. */
function incompleteTail(buf: Buffer): number {
  for (let back = 1; back <= Math.min(4, buf.length); back++) {
    const byte = buf[buf.length - back];
    if (isContinuation(byte)) continue;
    return sequenceLength(byte) > back ? back : 0;
  }
  return 0;
}

/**
 * Turns process output into bounded `OutputChunk`s (at most `chunkBytes` UTF-8 bytes each,
 * never splitting a character) and keeps only the last `tailBytes` for the outcome, so a
 * task that prints gigabytes costs a constant amount of memory. With a `masker`, the task's
 * secrets are masked before anything is emitted or kept.
 */
export class OutputCollector {
  private seq = 0;
  private currentTry = 1;
  private readonly pending: Record<OutputStream, Buffer> = { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) };
  private tailParts: Buffer[] = [];
  private capture?: { stream: OutputStream; limit: number; parts: Buffer[]; size: number; total: number };
  private tailSize = 0;

  constructor(
    private readonly chunkBytes: number,
    private readonly tailBytes: number,
    private readonly listener?: OutputListener,
    private readonly masker?: SecretMasker,
  ) {
    if (!(chunkBytes >= 4)) throw new RangeError(`outputChunkBytes must be at least 4, got ${chunkBytes}`);
  }

  /** Output from now on belongs to try `n` (call once the previous try's output was flushed). */
  startTry(n: number): void {
    this.currentTry = n;
    if (this.capture) this.capture = { ...this.capture, parts: [], size: 0, total: 0 };
  }

  /**
   * From now on keeps what `stream` emits in the current try (masked, at most `limitBytes`;
   * `captured().totalBytes` counts all of it): how check mode reads rsync's itemized changes and
   * puppet's noop report.
   */
  captureStream(stream: OutputStream, limitBytes: number): void {
    this.capture = { stream, limit: limitBytes, parts: [], size: 0, total: 0 };
  }

  /** What `captureStream` kept of the current try, and how many bytes the stream emitted in it. */
  captured(): { text: string; totalBytes: number } {
    return { text: Buffer.concat(this.capture?.parts ?? []).toString('utf8'), totalBytes: this.capture?.total ?? 0 };
  }

  /** Takes raw bytes (or text) from one stream; emits whole characters only. */
  write(stream: OutputStream, data: Buffer | string): void {
    let buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    if (this.pending[stream].length > 0) buf = Buffer.concat([this.pending[stream], buf]);
    if (this.masker?.active) {
      // Held bytes may begin a secret; they start a character, so what goes out ends on one.
      const { out, held } = this.masker.mask(buf);
      const cut = held.length > 0 ? 0 : incompleteTail(out);
      this.pending[stream] = held.length > 0 ? held : Buffer.from(out.subarray(out.length - cut));
      this.emitBounded(stream, out.subarray(0, out.length - cut));
      return;
    }
    const keep = incompleteTail(buf);
    const ready = buf.subarray(0, buf.length - keep);
    this.pending[stream] = Buffer.from(buf.subarray(buf.length - keep));
    this.emitBounded(stream, ready);
  }

  /** Emits bytes held back waiting for the rest of a character (call when the streams closed). */
  flush(): void {
    for (const stream of ['stdout', 'stderr'] as const) {
      const rest = this.pending[stream];
      this.pending[stream] = Buffer.alloc(0);
      this.emitBounded(stream, this.masker?.active ? this.masker.mask(rest, true).out : rest);
    }
  }

  /** A message about the task (an error), with its secrets masked as its output is. */
  maskText(text: string): string {
    return this.masker ? this.masker.maskText(text) : text;
  }

  /** The last `tailBytes` of everything emitted, starting on a character boundary. */
  tail(): string {
    const all = Buffer.concat(this.tailParts);
    let start = Math.max(0, all.length - this.tailBytes);
    while (start < all.length && isContinuation(all[start])) start++;
    return all.subarray(start).toString('utf8');
  }

  private emitBounded(stream: OutputStream, buf: Buffer): void {
    let offset = 0;
    while (offset < buf.length) {
      const rest = buf.subarray(offset);
      const n = charBoundary(rest, this.chunkBytes);
      const piece = rest.subarray(0, n);
      offset += n;
      this.keepTail(piece);
      if (this.capture?.stream === stream) this.keepCaptured(this.capture, piece);
      if (this.listener) {
        try {
          this.listener({ stream, data: piece.toString('utf8'), seq: this.seq++, try: this.currentTry });
        } catch {
          // A broken listener must not break the task (or crash the agent from a stream callback).
        }
      }
    }
  }

  private keepCaptured(c: NonNullable<typeof this.capture>, piece: Buffer): void {
    c.total += piece.length;
    const room = c.limit - c.size;
    if (room <= 0) return;
    const kept = piece.length <= room ? piece : piece.subarray(0, charBoundary(piece, room));
    c.parts.push(Buffer.from(kept));
    c.size += kept.length;
  }

  private keepTail(piece: Buffer): void {
    if (this.tailBytes <= 0) return;
    this.tailParts.push(Buffer.from(piece));
    this.tailSize += piece.length;
    while (this.tailParts.length > 1 && this.tailSize - this.tailParts[0].length >= this.tailBytes) {
      this.tailSize -= this.tailParts[0].length;
      this.tailParts.shift();
    }
  }
}
