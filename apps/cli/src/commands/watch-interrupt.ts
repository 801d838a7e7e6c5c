import { createInterface } from 'node:readline';
import { isatty } from 'node:tty';

/** Exit code of a watch left with Ctrl-C: the run goes on, its outcome is not known here (128 + SIGINT). */
export const EXIT_DETACHED = 130;

export type InterruptChoice = 'stop' | 'detach' | 'continue';

/**
 * What Ctrl-C during a watch does: on a terminal (stdin and stderr both one, so the question can
 * be seen and answered) it asks; in a non-interactive shell (CI, a pipe, `nohup`) it detaches.
 */
export function interruptMode(interactive: boolean): 'ask' | 'detach' {
  return interactive ? 'ask' : 'detach';
}

/** True when Ctrl-C may ask: stdin and stderr are terminals. */
export function interactiveTerminal(): boolean {
  return isatty(0) && isatty(2);
}

/** `s`/`stop`, `d`/`detach`, `c`/`continue` or an empty line (continue); anything else: ask again. */
export function parseInterruptAnswer(answer: string): InterruptChoice | undefined {
  const a = answer.trim().toLowerCase();
  if (a === 's' || a === 'stop') return 'stop';
  if (a === 'd' || a === 'detach') return 'detach';
  if (a === '' || a === 'c' || a === 'continue') return 'continue';
  return undefined;
}

export function interruptQuestion(runId: string): string {
  return `run ${runId} is still running: [s]top it, [d]etach (it goes on), or [c]ontinue watching? `;
}

/** What a detached watch says on stderr: the run goes on, and how to reattach or stop it. */
export function detachedMessage(runId: string): string {
  return `detached from run ${runId}: it goes on without this command; reattach with: granule watch ${runId} (stop it with: granule stop ${runId})`;
}

/** What a watch lets Ctrl-C do to its run and its display. */
export interface InterruptHooks {
  /** Stop drawing (the question, or the last words, are printed next). */
  pause(): void;
  /** Draw again after the question. */
  resume(): void;
  /** Ask the orchestrator to stop the run gracefully. */
  stop(): Promise<void>;
}

export interface InterruptIo {
  interactive: boolean;
  write(text: string): void;
  /** Asks one question on the terminal; resolves undefined on a second Ctrl-C, end of input or `signal`. */
  question(text: string, signal: AbortSignal): Promise<string | undefined>;
  exit(code: number): void;
}

/** Reads one answer from the terminal; a Ctrl-C or end of input while asking resolves undefined. */
function terminalQuestion(text: string, signal: AbortSignal): Promise<string | undefined> {
  return new Promise((resolve) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
    let answered = false;
    const done = (answer: string | undefined): void => {
      if (answered) return;
      answered = true;
      rl.close();
      process.stdin.pause();
      resolve(answer);
    };
    rl.on('SIGINT', () => done(undefined));
    signal.addEventListener('abort', () => done(undefined), { once: true });
    rl.on('close', () => done(undefined));
    rl.question(text, (answer) => done(answer));
  });
}

const processIo = (): InterruptIo => ({
  interactive: interactiveTerminal(),
  write: (text) => process.stderr.write(text),
  question: terminalQuestion,
  // Detaching leaves the watch loop mid-poll: the process ends here, the run is the orchestrator's.
  exit: (code) => process.exit(code),
});

/**
 * Ctrl-C during `deploy --watch`, `retry --watch` and `watch`: asks whether to stop the run or
 * detach (on a terminal), or detaches (elsewhere) and says how to reattach. While a stop is under
 * way, or while the question is asked, a second Ctrl-C detaches.
 */
export class WatchInterrupts {
  private asking = false;
  private stopping = false;
  // The watch ended: a question still on the screen is withdrawn and its answer ignored.
  private readonly ended = new AbortController();
  private readonly onSignal = (): void => void this.interrupted();

  constructor(
    private readonly runId: string,
    private readonly hooks: InterruptHooks,
    private readonly io: InterruptIo = processIo(),
  ) {}

  install(): this {
    process.on('SIGINT', this.onSignal);
    return this;
  }

  uninstall(): void {
    process.off('SIGINT', this.onSignal);
    this.ended.abort();
  }

  /** One Ctrl-C. */
  async interrupted(): Promise<void> {
    if (this.asking) return;
    if (interruptMode(this.io.interactive) === 'detach' || this.stopping) return this.detach();
    this.asking = true;
    this.hooks.pause();
    let choice: InterruptChoice | undefined;
    for (;;) {
      const answer = await this.io.question(`\n${interruptQuestion(this.runId)}`, this.ended.signal);
      if (this.ended.signal.aborted) {
        this.io.write('\n');
        return;
      }
      if (answer === undefined) {
        choice = 'detach';
        break;
      }
      choice = parseInterruptAnswer(answer);
      if (choice) break;
      this.io.write(`expected s (stop), d (detach) or c (continue), got ${JSON.stringify(answer.trim())}\n`);
    }
    this.asking = false;
    if (choice === 'detach') return this.detach();
    if (choice === 'stop') {
      this.stopping = true;
      this.io.write(`stopping run ${this.runId}: running tasks finish, nothing new starts (Ctrl-C again to detach)\n`);
      try {
        await this.hooks.stop();
      } catch (err) {
        this.stopping = false;
        this.io.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
      }
    }
    this.hooks.resume();
  }

  private detach(): void {
    this.hooks.pause();
    this.io.write(`\n${detachedMessage(this.runId)}\n`);
    this.io.exit(EXIT_DETACHED);
  }
}
