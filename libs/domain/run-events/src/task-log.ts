/**
 * Task logs: what a task printed, per try on its host, in the order it was read, with the time
 * each piece was read. Agents send them on the LOGS stream; the control plane keeps at most a
 * limit per try and marks the cut (ADR 0030).
 */

export type TaskLogStream = 'stdout' | 'stderr';

/** One piece of output as the agent read it: its stream, when (ms since the epoch), its text. */
export interface TaskLogChunk {
  stream: TaskLogStream;
  at: number;
  data: string;
}

/**
 * Agent → control plane on `<p>.log.<run>.<node>` (JetStream stream LOGS). The output of one try
 * of a task instance, in order: `seq` numbers the messages of a try from 0, and the JetStream
 * message id `<dispatchId>/log/<try>/<seq>` makes a resend harmless.
 */
export interface TaskLogMessage {
  runId: string;
  key: string;
  node: string;
  /** The dispatch (as in the Task* events). */
  attempt: number;
  /** The try on the host, 1-based (retries happen in the agent). */
  try: number;
  seq: number;
  chunks: TaskLogChunk[];
  /** Output past the limit that was not sent (on the try's last message). */
  cut?: TaskLogCut;
  /** The try's last message. */
  end?: boolean;
}

/** Where a try's log was cut: the limit it reached and the bytes left out after it. */
export interface TaskLogCut {
  limitBytes: number;
  droppedBytes: number;
}

/** Output kept per try unless the installation sets another limit (`GRANULE_TASK_LOG_LIMIT_BYTES`). */
export const DEFAULT_TASK_LOG_LIMIT_BYTES = 1024 * 1024;
/** The smallest and largest limit an installation may set. */
export const TASK_LOG_LIMIT_BOUNDS = Object.freeze({ min: 64 * 1024, max: 64 * 1024 * 1024 });

/** UTF-8 length of a string, without allocating. */
export function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** The longest start of `text` whose UTF-8 length is at most `bytes`, never splitting a character. */
export function utf8Prefix(text: string, bytes: number): string {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < text.length;
    const size = c < 0x80 ? 1 : c < 0x800 ? 2 : pair ? 4 : 3;
    if (n + size > bytes) return text.slice(0, i);
    n += size;
    if (pair) i++;
  }
  return text;
}

/**
 * The part of `chunks` that fits in a try's budget: `usedBytes` of `limitBytes` are already kept.
 * What does not fit is counted in `droppedBytes`, and a chunk that crosses the limit is cut on a
 * character boundary.
 */
export function fitTaskLog(
  chunks: readonly TaskLogChunk[],
  usedBytes: number,
  limitBytes: number,
): { kept: TaskLogChunk[]; keptBytes: number; droppedBytes: number } {
  const kept: TaskLogChunk[] = [];
  let keptBytes = 0;
  let droppedBytes = 0;
  // What is kept is a prefix of the output: once a chunk does not fit, nothing after it is kept.
  let full = usedBytes >= limitBytes;
  for (const chunk of chunks) {
    const size = utf8Length(chunk.data);
    const room = full ? 0 : Math.max(0, limitBytes - usedBytes - keptBytes);
    if (size <= room) {
      kept.push(chunk);
      keptBytes += size;
      continue;
    }
    full = true;
    const part = room > 0 ? utf8Prefix(chunk.data, room) : '';
    if (part !== '') {
      const partBytes = utf8Length(part);
      kept.push({ ...chunk, data: part });
      keptBytes += partBytes;
      droppedBytes += size - partBytes;
    } else droppedBytes += size;
  }
  return { kept, keptBytes, droppedBytes };
}

/** One stored piece of a task log, as `runs.logs` returns it. */
export interface TaskLogRecord {
  /** Position in the store: a reader asks for records after the last one it has. */
  id: string;
  node: string;
  key: string;
  try: number;
  stream: TaskLogStream;
  /** ISO 8601. */
  at: string;
  data: string;
  /** The record that marks where a try's log was cut (its `data` is empty). */
  cut?: TaskLogCut;
}

/** A line of a task log, as `granule logs` prints it. */
export interface TaskLogLine {
  at: string;
  node: string;
  task: string;
  try: number;
  stream: TaskLogStream | 'granule';
  line: string;
  /** False for the last line of a try's stream when the task never ended it. */
  eol: boolean;
  cut?: TaskLogCut;
}

/** The task of a `task@node` key. */
export const taskOfKey = (key: string): string =>
  key.slice(0, key.lastIndexOf('@') < 0 ? key.length : key.lastIndexOf('@'));

/** Text of a cut marker. */
export function cutMessage(cut: TaskLogCut): string {
  return `output cut at ${cut.limitBytes} bytes: ${cut.droppedBytes} more bytes were not kept`;
}

/**
 * Turns log records into lines: a line split across records is joined (it takes the time of its
 * first piece), each try's stdout and stderr are followed apart, and `flush` gives the lines a
 * task never ended.
 */
export class TaskLogLineSplitter {
  private readonly open = new Map<string, { at: string; text: string; record: TaskLogRecord }>();

  push(record: TaskLogRecord): TaskLogLine[] {
    const lines: TaskLogLine[] = [];
    const id = `${record.node}\u0000${record.key}\u0000${record.try}\u0000${record.stream}`;
    if (record.cut) {
      // The cut ends whatever was open in the try: its lines first, then the marker.
      for (const stream of ['stdout', 'stderr'] as const) {
        const other = `${record.node}\u0000${record.key}\u0000${record.try}\u0000${stream}`;
        const pending = this.open.get(other);
        if (pending) {
          this.open.delete(other);
          lines.push(lineOf(pending.record, pending.at, pending.text, false));
        }
      }
      lines.push({ ...lineOf(record, record.at, cutMessage(record.cut), true), stream: 'granule', cut: record.cut });
      return lines;
    }
    let pending = this.open.get(id);
    let rest = record.data;
    for (;;) {
      const nl = rest.indexOf('\n');
      if (nl < 0) break;
      const text = rest.slice(0, nl);
      rest = rest.slice(nl + 1);
      lines.push(lineOf(record, pending?.at ?? record.at, (pending?.text ?? '') + text, true));
      pending = undefined;
    }
    if (rest !== '') pending = { at: pending?.at ?? record.at, text: (pending?.text ?? '') + rest, record };
    if (pending) this.open.set(id, pending);
    else this.open.delete(id);
    return lines;
  }

  /** The lines still open (a task that never ended its last line), oldest first. */
  flush(): TaskLogLine[] {
    const lines = [...this.open.values()]
      .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0))
      .map((p) => lineOf(p.record, p.at, p.text, false));
    this.open.clear();
    return lines;
  }
}

function lineOf(record: TaskLogRecord, at: string, text: string, eol: boolean): TaskLogLine {
  return {
    at,
    node: record.node,
    task: taskOfKey(record.key),
    try: record.try,
    stream: record.stream,
    line: text.endsWith('\r') ? text.slice(0, -1) : text,
    eol,
  };
}
