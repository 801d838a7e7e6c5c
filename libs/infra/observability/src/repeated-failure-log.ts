/** The logger calls `RepeatedFailureLog` makes (pino's signature). */
export interface FailureLogger {
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

export interface RepeatedFailureLogOptions {
  /** Logged at the first failure, and as a reminder while it lasts. */
  failing: string;
  /** Logged once when it works again. */
  recovered: string;
  /** Level of the failure lines; default `warn`. */
  level?: 'warn' | 'error';
  /** At most one reminder this often while the failure lasts (ms); default 30 s. */
  remindEveryMs?: number;
  /** Milliseconds; default `Date.now`. */
  clock?: () => number;
  /** The error in words (default: its message). */
  describe?: (err: unknown) => string;
}

/**
 * Says a failure that is retried (a database or broker outage) once instead of at every retry:
 * the first failure is logged with its error, then at most one reminder every `remindEveryMs`
 * with how many attempts failed and for how long, and one line when an attempt works again. A
 * ten-minute PostgreSQL outage is then a few lines, not one per tick.
 */
export class RepeatedFailureLog {
  private failures = 0;
  private since = 0;
  private lastLine = 0;
  private readonly remindEveryMs: number;
  private readonly clock: () => number;

  constructor(
    private readonly logger: FailureLogger,
    private readonly options: RepeatedFailureLogOptions,
  ) {
    this.remindEveryMs = options.remindEveryMs ?? 30_000;
    this.clock = options.clock ?? Date.now;
  }

  /** True between a failure and the next success. */
  get failing(): boolean {
    return this.failures > 0;
  }

  /** An attempt failed with `err`. */
  failed(err: unknown, fields: object = {}): void {
    const now = this.clock();
    this.failures++;
    if (this.failures === 1) this.since = now;
    else if (now - this.lastLine < this.remindEveryMs) return;
    this.lastLine = now;
    const level = this.options.level ?? 'warn';
    const error = this.options.describe ? this.options.describe(err) : err instanceof Error ? err.message : String(err);
    const lasting =
      this.failures === 1 ? {} : { failedAttempts: this.failures, failingForS: Math.round((now - this.since) / 1000) };
    this.logger[level]({ ...fields, err: error, ...lasting }, this.options.failing);
  }

  /** An attempt worked: says so once if the previous ones failed. */
  succeeded(fields: object = {}): void {
    if (this.failures === 0) return;
    this.logger.info(
      { ...fields, failedAttempts: this.failures, failedForS: Math.round((this.clock() - this.since) / 1000) },
      this.options.recovered,
    );
    this.failures = 0;
  }
}
