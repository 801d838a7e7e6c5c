/** What a secret becomes in a task's output. */
export const OUTPUT_MASK = '***';
const MASK_BYTES = Buffer.from(OUTPUT_MASK);

/**
 * Replaces a task's secrets with `***` in its output, on bytes as they arrive: text that could be
 * the start of a secret is held back until the next bytes say whether it is one, so a secret split
 * across two reads (or two chunks) is still masked. Each secret is masked whole, and so is each
 * line of a multi-line secret (a key file printed in part).
 */
export class SecretMasker {
  private readonly needles: Buffer[];
  private readonly firstBytes = new Set<number>();
  private readonly longest: number;

  constructor(secrets: readonly string[]) {
    const texts = new Set<string>();
    for (const secret of secrets) {
      if (secret === '') continue;
      texts.add(secret);
      const lines = secret.split(/\r?\n/);
      // Lines of a few characters ("}", "--") would mask ordinary output; the whole value still is.
      if (lines.length > 1) for (const line of lines) if (line.trim().length >= 4) texts.add(line);
    }
    // Longest first: where two secrets start at one place, the longer one is masked.
    this.needles = [...texts].map((t) => Buffer.from(t, 'utf8')).sort((a, b) => b.length - a.length);
    for (const n of this.needles) this.firstBytes.add(n[0]);
    this.longest = this.needles[0]?.length ?? 0;
  }

  /** True when there is something to mask. */
  get active(): boolean {
    return this.needles.length > 0;
  }

  /**
   * Masks `buf`; `held` is the end of it that may be the start of a secret (to be passed again in
   * front of the next bytes). With `final`, nothing is held: no more bytes will come.
   */
  mask(buf: Buffer, final = false): { out: Buffer; held: Buffer } {
    if (!this.active) return { out: buf, held: Buffer.alloc(0) };
    const parts: Buffer[] = [];
    let start = 0;
    let i = 0;
    let holdFrom = buf.length;
    while (i < buf.length) {
      if (!this.firstBytes.has(buf[i])) {
        i++;
        continue;
      }
      if (!final && buf.length - i < this.longest && this.startsSecret(buf, i)) {
        holdFrom = i;
        break;
      }
      const n = this.matchAt(buf, i);
      if (n === 0) {
        i++;
        continue;
      }
      parts.push(buf.subarray(start, i), MASK_BYTES);
      i += n;
      start = i;
    }
    if (start === 0 && holdFrom === buf.length) return { out: buf, held: Buffer.alloc(0) };
    parts.push(buf.subarray(start, holdFrom));
    return { out: Buffer.concat(parts), held: Buffer.from(buf.subarray(holdFrom)) };
  }

  /** A whole text (an error message), masked. */
  maskText(text: string): string {
    return this.active ? this.mask(Buffer.from(text, 'utf8'), true).out.toString('utf8') : text;
  }

  /** Length of the longest secret at `buf[i]`, or 0. */
  private matchAt(buf: Buffer, i: number): number {
    for (const n of this.needles)
      if (n.length <= buf.length - i && buf.compare(n, 0, n.length, i, i + n.length) === 0) return n.length;
    return 0;
  }

  /** True when `buf[i..]` is a proper beginning of some secret (more bytes could complete it). */
  private startsSecret(buf: Buffer, i: number): boolean {
    const rest = buf.length - i;
    for (const n of this.needles) if (n.length > rest && buf.compare(n, 0, rest, i, buf.length) === 0) return true;
    return false;
  }
}
