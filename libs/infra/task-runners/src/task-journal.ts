import { fdatasync } from 'node:fs';
import { mkdir, open, readFile, type FileHandle } from 'node:fs/promises';
import * as path from 'node:path';
import { writeAllSync } from './atomic-file';
import { TaskJournalError } from './task-runner.errors';
import type { TaskExecution, TaskOutcome } from './task-runner.types';

/** One line of the journal file. */
export interface TaskJournalEntry {
  key: string;
  outcome: TaskOutcome;
  /** ISO time the outcome was recorded. */
  recordedAt: string;
}

export const TASK_JOURNAL_FILE = 'task-journal.jsonl';

/**
 * The journal key of a dispatched task: `runId/taskId/nodeUid/attempt`, each part URI-encoded
 * (so a `/` inside an id cannot make two keys equal). `attempt` is the orchestrator's dispatch
 * number (default 1): a redelivery of the same dispatch finds the recorded outcome, while a task
 * the orchestrator deliberately re-issues (attempt 2, ...) runs again. No separate dispatchId is
 * needed as long as the orchestrator numbers its re-dispatches.
 */
export function journalKey(exec: Pick<TaskExecution, 'runId' | 'taskId' | 'nodeUid' | 'attempt'>): string {
  return [exec.runId, exec.taskId, exec.nodeUid, String(exec.attempt ?? 1)].map(encodeURIComponent).join('/');
}

/**
 * The outcomes of tasks this agent finished, kept in an append-only JSON-lines file so a task
 * delivered again (broker redelivery, agent restart) is answered from here and never run twice.
 * `append` writes an outcome's line at once and returns its flush to disk. On open, a line that
 * cannot be read (the tail of a write cut by a crash) is skipped and counted in `skippedLines`;
 * the last line of a key wins. One journal file belongs to one agent process at a time.
 */
export class TaskJournal {
  private closed = false;

  private constructor(
    /** Path of the journal file. */
    readonly file: string,
    private readonly entries: Map<string, TaskJournalEntry>,
    private handle: FileHandle,
    private needsNewline: boolean,
    /** Lines of the file that were not valid entries when it was opened. */
    readonly skippedLines: number,
    private readonly now: () => Date,
  ) {}

  /** Opens (creating if needed) `<stateDir>/task-journal.jsonl` and loads it. */
  static async open(stateDir: string, options: { fileName?: string; now?: () => Date } = {}): Promise<TaskJournal> {
    const file = path.join(stateDir, options.fileName ?? TASK_JOURNAL_FILE);
    try {
      await mkdir(stateDir, { recursive: true, mode: 0o700 });
      const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return '';
        throw err;
      });
      const entries = new Map<string, TaskJournalEntry>();
      let skipped = 0;
      for (const line of text.split('\n')) {
        if (line.trim() === '') continue;
        const entry = parseEntry(line);
        if (entry) entries.set(entry.key, entry);
        else skipped++;
      }
      const handle = await open(file, 'a', 0o600);
      return new TaskJournal(
        file,
        entries,
        handle,
        text.length > 0 && !text.endsWith('\n'),
        skipped,
        options.now ?? (() => new Date()),
      );
    } catch (err) {
      throw new TaskJournalError(`cannot open the task journal '${file}': ${(err as Error).message}`, { cause: err });
    }
  }

  /** The recorded outcome of `key`, if the task finished before. */
  get(key: string): TaskOutcome | undefined {
    return this.entries.get(key)?.outcome;
  }

  /** The whole entry of `key` (with the time it was recorded). */
  entry(key: string): TaskJournalEntry | undefined {
    return this.entries.get(key);
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * Writes the outcome's line now (synchronously, so the entry survives the death of this
   * process and is answered from at once) and returns the flush to disk (fdatasync, in the
   * thread pool), so the caller can report the outcome while the disk catches up and acknowledge
   * the dispatch only after both. Throws a `TaskJournalError` when the line cannot be written: the
   * entry is then not remembered and the next line starts on a line of its own, so a partly
   * written one is skipped when the journal is opened again. The returned promise rejects when
   * the flush fails; the entry stays answered from memory by this process.
   */
  append(key: string, outcome: TaskOutcome): Promise<void> {
    if (this.closed) throw new TaskJournalError(`the task journal '${this.file}' is closed`);
    const entry: TaskJournalEntry = { key, outcome, recordedAt: this.now().toISOString() };
    const line = `${this.needsNewline ? '\n' : ''}${JSON.stringify(entry)}\n`;
    try {
      writeAllSync(this.handle.fd, line);
    } catch (err) {
      this.needsNewline = true;
      throw new TaskJournalError(`cannot append to the task journal '${this.file}': ${(err as Error).message}`, {
        cause: err,
      });
    }
    this.needsNewline = false;
    this.entries.set(key, entry);
    const fd = this.handle.fd;
    return new Promise<void>((resolve, reject) =>
      fdatasync(fd, (err) =>
        err
          ? reject(
              new TaskJournalError(`cannot flush the task journal '${this.file}' to disk: ${err.message}`, {
                cause: err,
              }),
            )
          : resolve(),
      ),
    );
  }

  /** Closes the file; later `append` calls throw. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.handle.close();
  }
}

function parseEntry(line: string): TaskJournalEntry | undefined {
  try {
    const value = JSON.parse(line) as Partial<TaskJournalEntry>;
    if (typeof value.key !== 'string' || typeof value.outcome !== 'object' || value.outcome === null) return undefined;
    if (typeof (value.outcome as { status?: unknown }).status !== 'string') return undefined;
    return {
      key: value.key,
      outcome: value.outcome,
      recordedAt: typeof value.recordedAt === 'string' ? value.recordedAt : '',
    };
  } catch {
    return undefined;
  }
}
