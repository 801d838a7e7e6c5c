import { readFile, rename } from 'node:fs/promises';
import * as path from 'node:path';
import { writeFileAtomic, type TaskProcessGroup } from '@granule/task-runners';
import type { TaskMarker } from './dispatch-decision';

/** File in the state dir holding the running-task marker and pending reboots. */
export const AGENT_STATE_FILE = 'agent-state.json';

interface AgentStateDocument {
  version: 1;
  running?: TaskMarker;
  pendingReboots: TaskMarker[];
}

/**
 * The agent's own small state next to the task journal: which task it is running (so a restart
 * can tell a task was interrupted) and which reboots wait for the host to come back. Every
 * change is written atomically and fsynced before the promise resolves.
 */
export class AgentStateStore {
  private writes: Promise<void> = Promise.resolve();

  private constructor(
    readonly file: string,
    private doc: AgentStateDocument,
  ) {}

  /**
   * Loads `<stateDir>/agent-state.json` (empty when missing). An unreadable file is moved aside
   * to `<file>.unreadable-<time>` and reported in `setAside`, so the agent can still start.
   */
  static async open(stateDir: string, now: Date = new Date()): Promise<{ store: AgentStateStore; setAside?: string }> {
    const file = path.join(stateDir, AGENT_STATE_FILE);
    const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
    if (text === undefined) return { store: new AgentStateStore(file, { version: 1, pendingReboots: [] }) };
    const doc = parseState(text);
    if (doc) return { store: new AgentStateStore(file, doc) };
    const setAside = `${file}.unreadable-${now.toISOString().replace(/[:.]/g, '-')}`;
    await rename(file, setAside);
    return { store: new AgentStateStore(file, { version: 1, pendingReboots: [] }), setAside };
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
    return this.update({ ...this.doc, running: marker });
  }

  /** Adds the process group of the running task's current attempt to its marker (a later attempt's replaces it). */
  recordProcess(dispatchId: string, group: TaskProcessGroup): Promise<void> {
    if (this.doc.running?.dispatchId !== dispatchId) return this.writes;
    return this.update({ ...this.doc, running: { ...this.doc.running, process: group } });
  }

  /** Clears the running marker of `dispatchId`, if it is the running one. */
  finish(dispatchId: string): Promise<void> {
    if (this.doc.running?.dispatchId !== dispatchId) return this.writes;
    return this.update({ ...this.doc, running: undefined });
  }

  /** Turns the running marker into a pending reboot, in one write. */
  awaitReboot(pending: TaskMarker): Promise<void> {
    const others = this.doc.pendingReboots.filter((m) => m.dispatchId !== pending.dispatchId);
    const running = this.doc.running?.dispatchId === pending.dispatchId ? undefined : this.doc.running;
    return this.update({ ...this.doc, running, pendingReboots: [...others, pending] });
  }

  /** Forgets a marker (running or pending reboot) once its outcome is journaled. */
  forget(dispatchId: string): Promise<void> {
    const running = this.doc.running?.dispatchId === dispatchId ? undefined : this.doc.running;
    return this.update({ ...this.doc, running, pendingReboots: this.doc.pendingReboots.filter((m) => m.dispatchId !== dispatchId) });
  }

  private update(next: AgentStateDocument): Promise<void> {
    this.doc = next;
    const body = `${JSON.stringify(next, null, 2)}\n`;
    const write = this.writes.then(() => writeFileAtomic(this.file, body, 0o600, 0o700));
    this.writes = write.catch(() => undefined);
    return write;
  }
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
