import {
  DEFAULT_TASK_LOG_LIMIT_BYTES,
  fitTaskLog,
  utf8Length,
  type TaskLogChunk,
  type TaskLogMessage,
} from '@granule/contracts';
import type { OutputChunk } from '@granule/task-runners';

/** Output is sent at least this often while a task prints (ms). */
export const LOG_FLUSH_MS = 250;
/** A message carries at most about this much output (bytes), well under NATS's max payload. */
export const LOG_MESSAGE_BYTES = 64 * 1024;

/** Sends one log message; resolves once the LOGS stream stored it (the msgID makes a resend harmless). */
export type PublishLog = (message: TaskLogMessage, msgID: string) => Promise<void>;

/** Who the output belongs to: one dispatch of a task instance. */
export interface LogTarget {
  runId: string;
  key: string;
  node: string;
  attempt: number;
  dispatchId: string;
}

/**
 * Ships one dispatch's output to the LOGS stream (ADR 0030): chunks are batched (every
 * `LOG_FLUSH_MS`, or at `LOG_MESSAGE_BYTES`), sent one message after another so the stream keeps
 * their order, and cut at `limitBytes` per try: what is left out is counted and the try's last
 * message says so. `close` sends what is left and waits until the stream has everything.
 */
export class TaskLogShipper {
  private buffer: TaskLogChunk[] = [];
  private bufferBytes = 0;
  private currentTry = 1;
  private seq = 0;
  private sentBytes = 0;
  private droppedBytes = 0;
  private timer?: NodeJS.Timeout;
  private chain: Promise<void> = Promise.resolve();
  private failure?: Error;

  constructor(
    private readonly target: LogTarget,
    private readonly publish: PublishLog,
    private readonly limitBytes = DEFAULT_TASK_LOG_LIMIT_BYTES,
    private readonly now: () => number = Date.now,
  ) {}

  /** An output chunk of the runner, as it is read. */
  add(chunk: OutputChunk): void {
    if (chunk.try !== this.currentTry) {
      this.flush(true);
      this.currentTry = chunk.try;
      this.seq = 0;
      this.sentBytes = 0;
      this.droppedBytes = 0;
    }
    const fit = fitTaskLog(
      [{ stream: chunk.stream, at: this.now(), data: chunk.data }],
      this.sentBytes,
      this.limitBytes,
    );
    this.sentBytes += fit.keptBytes;
    this.droppedBytes += fit.droppedBytes;
    for (const c of fit.kept) {
      this.buffer.push(c);
      this.bufferBytes += utf8Length(c.data);
    }
    if (this.bufferBytes >= LOG_MESSAGE_BYTES) this.flush(false);
    else if (this.buffer.length > 0 && !this.timer) this.timer = setTimeout(() => this.flush(false), LOG_FLUSH_MS);
  }

  /** Sends what is buffered and the try's end; resolves once the stream stored every message (or throws why not). */
  async close(): Promise<void> {
    this.flush(true);
    await this.chain;
    if (this.failure) throw this.failure;
  }

  private flush(end: boolean): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const cut = end && this.droppedBytes > 0;
    // A try with no output sends nothing: a quick silent task costs no log message.
    if (this.buffer.length === 0 && !cut) return;
    const message: TaskLogMessage = {
      runId: this.target.runId,
      key: this.target.key,
      node: this.target.node,
      attempt: this.target.attempt,
      try: this.currentTry,
      seq: this.seq++,
      chunks: this.buffer,
      ...(cut ? { cut: { limitBytes: this.limitBytes, droppedBytes: this.droppedBytes } } : {}),
      ...(end ? { end: true } : {}),
    };
    this.buffer = [];
    this.bufferBytes = 0;
    const msgID = `${this.target.dispatchId}/log/${message.try}/${message.seq}`;
    this.chain = this.chain.then(() =>
      this.failure
        ? undefined
        : this.publish(message, msgID).catch((err: Error) => {
            this.failure = err;
          }),
    );
  }
}
