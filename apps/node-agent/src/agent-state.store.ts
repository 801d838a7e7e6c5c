import { closeSync, fdatasyncSync, mkdirSync, openSync } from 'node:fs';
import { readFile, rename, unlink } from 'node:fs/promises';
import * as path from 'node:path';
import { writeAllSync, writeFileAtomicSync, type TaskProcessGroup } from '@granule/task-runners';
import type { TaskMarker } from './dispatch-decision';

/** File in the state dir holding the running-task marker and pending reboots, a state per line. */
export const AGENT_STATE_FILE = 'agent-state.jsonl';
/** The single-document file of agents before 0.2; read once and replaced by `AGENT_STATE_FILE`. */
export const LEGACY_AGENT_STATE_FILE = 'agent-state.json';
/** Lines after which the file is rewritten with the current state alone. */
const COMPACT_AFTER_LINES = 1000;

interface AgentStateDocument {
  version: 1;
  running?: TaskMarker;
  pendingReboots: TaskMarker[];
}

const EMPTY: AgentStateDocument = { version: 1, pendingReboots: [] };

/**
 * The agent's own small state next to the task journal: which task it is running (so a restart
 * can tell a task was interrupted) and which reboots wait for the host to come back.
 *
 * Each change appends the whole state as one line (the last whole line wins when the file is
 * read, so a line torn by a crash is skipped) before the call returns; the write blocks instead
 * of queueing behind the thread pool, because it sits on every task's path. What must outlive
 * the host is flushed (fdatasync): a task marked running (after a host crash its dispatch comes
 * back and must be failed, not run again) and pending reboots. The rest may be lost with the
 * host: a task's process group (its processes are gone too) and the clearing of a finished
 * task's marker (a stale marker whose outcome is journaled is answered from the journal, which
 * changes nothing). A change whose write fails is not kept in memory either. The file is
 * rewritten with the current state alone when opened and every `COMPACT_AFTER_LINES` lines.
 */
export class AgentStateStore {
  private fd?: number;
  private lines = 0;

  private constructor(
    readonly file: string,
    private doc: AgentStateDocument,
  ) {}

  /**
   * Loads `<stateDir>/agent-state.jsonl` (empty when missing; an `agent-state.json` of an older
   * agent is taken over). A file without one readable state is moved aside to
   * `<file>.unreadable-<time>` and reported in `setAside`, so the agent can still start.
   */
  static async open(stateDir: string, now: Date = new Date()): Promise<{ store: AgentStateStore; setAside?: string }> {
    const file = path.join(stateDir, AGENT_STATE_FILE);
    const legacy = path.join(stateDir, LEGACY_AGENT_STATE_FILE);
    let source = file;
    let text = await readIfExists(file);
    if (text === undefined) {
      text = await readIfExists(legacy);
      source = legacy;
    }
    if (text === undefined) return { store: new AgentStateStore(file, EMPTY) };
    const doc = source === legacy ? parseState(text) : lastState(text);
    let setAside: string | undefined;
    if (!doc) {
      setAside = `${source}.unreadable-${now.toISOString().replace(/[:.]/g, '-')}`;
      await rename(source, setAside);
    }
    const store = new AgentStateStore(file, doc ?? EMPTY);
    // Start from one clean line (torn tails and old states dropped), then let the old format go.
    if (doc) store.compact();
    if (source === legacy && doc) await unlink(legacy);
    return { store, ...(setAside ? { setAside } : {}) };
  }

  /** Closes the file (the next change opens it again). */
  close(): void {
    if (this.fd === undefined) return;
    closeSync(this.fd);
    this.fd = undefined;
  }

  get running(): TaskMarker | undefined {
    return this.doc.running;
  }

  get pendingReboots(): readonly TaskMarker[] {
    return this.doc.pendingReboots;
  }

  pendingReboot(dispatchId: string): TaskMarker | undefined {
    return this.doc.pendingReboots.find((m) => m.dispatchId === dispatchId);
  }

  /** Marks `marker`'s task as running (before it starts). */
  start(marker: TaskMarker): Promise<void> {
    return this.update({ ...this.doc, running: marker }, true);
  }

  /** Adds the process group of the running task's current attempt to its marker (a later attempt's replaces it). */
  recordProcess(dispatchId: string, group: TaskProcessGroup): Promise<void> {
    if (this.doc.running?.dispatchId !== dispatchId) return Promise.resolve();
    return this.update({ ...this.doc, running: { ...this.doc.running, process: group } }, false);
  }

  /** Clears the running marker of `dispatchId`, if it is the running one. */
  finish(dispatchId: string): Promise<void> {
    if (this.doc.running?.dispatchId !== dispatchId) return Promise.resolve();
    return this.update({ ...this.doc, running: undefined }, false);
  }

  /** Turns the running marker into a pending reboot, in one write. */
  awaitReboot(pending: TaskMarker): Promise<void> {
    const others = this.doc.pendingReboots.filter((m) => m.dispatchId !== pending.dispatchId);
    const running = this.doc.running?.dispatchId === pending.dispatchId ? undefined : this.doc.running;
    return this.update({ ...this.doc, running, pendingReboots: [...others, pending] }, true);
  }

  /** Forgets a marker (running or pending reboot) once its outcome is journaled. */
  forget(dispatchId: string): Promise<void> {
    const running = this.doc.running?.dispatchId === dispatchId ? undefined : this.doc.running;
    const rebootSettled = this.doc.pendingReboots.some((m) => m.dispatchId === dispatchId);
    return this.update(
      { ...this.doc, running, pendingReboots: this.doc.pendingReboots.filter((m) => m.dispatchId !== dispatchId) },
      rebootSettled,
    );
  }

  private update(next: AgentStateDocument, durable: boolean): Promise<void> {
    try {
      if (this.lines >= COMPACT_AFTER_LINES) {
        this.compact(next);
      } else {
        if (this.fd === undefined) {
          mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
          this.fd = openSync(this.file, 'a', 0o600);
        }
        writeAllSync(this.fd, `${JSON.stringify(next)}\n`);
        if (durable) fdatasyncSync(this.fd);
        this.lines++;
      }
    } catch (err) {
      // A line may be half written: the next change rewrites the whole file.
      this.lines = COMPACT_AFTER_LINES;
      return Promise.reject(err);
    }
    this.doc = next;
    return Promise.resolve();
  }

  /** Replaces the file with `doc` alone (atomic and durable). */
  private compact(doc: AgentStateDocument = this.doc): void {
    this.close();
    writeFileAtomicSync(this.file, `${JSON.stringify(doc)}\n`, 0o600, 0o700);
    this.lines = 1;
  }
}

async function readIfExists(file: string): Promise<string | undefined> {
  return readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
}

/** The last line of `text` that is a whole state. */
function lastState(text: string): AgentStateDocument | undefined {
  const lines = text.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    if (lines[i].trim() === '') continue;
    const doc = parseState(lines[i]);
    if (doc) return doc;
  }
  return undefined;
}

function parseState(text: string): AgentStateDocument | undefined {
  try {
    const value = JSON.parse(text) as Partial<AgentStateDocument>;
    if (value.version !== 1 || !Array.isArray(value.pendingReboots)) return undefined;
    return { version: 1, running: value.running, pendingReboots: value.pendingReboots };
  } catch {
    return undefined;
  }
}
