import type { DataSource } from 'typeorm';
import { fitTaskLog, type TaskLogMessage, type TaskLogRecord } from '@granule/run-events';

/** What `TaskLogStore.append` did with a message. */
export interface TaskLogAppend {
  /** False for a message stored before (a redelivery): nothing changed. */
  stored: boolean;
  keptBytes: number;
  droppedBytes: number;
  /** The records this message added, in id order, as `read` returns them (none for a redelivery). */
  records: TaskLogRecord[];
}

/** Which records `TaskLogStore.read` returns. */
export interface TaskLogQuery {
  runIds: string[];
  node?: string;
  task?: string;
  try?: number;
  stderrOnly?: boolean;
  /** Records after this id (`TaskLogRecord.id`). */
  afterId?: string;
  limit: number;
}

interface LogRow {
  id: string;
  node: string;
  task_key: string;
  try: number;
  stream: 'stdout' | 'stderr' | 'cut';
  at: Date;
  data: string;
  cut_limit: string | null;
  cut_dropped: string | null;
}

// PostgreSQL text cannot hold NUL: a task that prints one gets U+FFFD in its stored log.
const withoutNul = (text: string): string => (text.includes('\u0000') ? text.split('\u0000').join('\uFFFD') : text);

const RECORD_COLUMNS = `id::text AS id, node, task_key, try, stream, at, data, cut_limit::text AS cut_limit,
              cut_dropped::text AS cut_dropped`;

function recordOf(r: LogRow): TaskLogRecord {
  return {
    id: r.id,
    node: r.node,
    key: r.task_key,
    try: r.try,
    stream: r.stream === 'cut' ? 'stderr' : r.stream,
    at: new Date(r.at).toISOString(),
    data: r.data,
    ...(r.stream === 'cut' ? { cut: { limitBytes: Number(r.cut_limit), droppedBytes: Number(r.cut_dropped) } } : {}),
  };
}

/**
 * The transaction-scoped advisory lock a writer of task log records holds from taking its ids to
 * its commit (an arbitrary constant, the same in every orchestrator: "granule task log ids").
 */
const TASK_LOG_ID_LOCK = '7236915473904652288';

/**
 * Task logs in PostgreSQL (ADR 0030), next to the event log: each try's output up to a limit,
 * the cut marked, stored once however often its message is delivered.
 */
export class TaskLogStore {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Stores one agent message in one transaction: the try's row is locked, a message already
   * stored is skipped, what fits in `limitBytes` (the limit the try's first message met) is kept,
   * and the try's last message adds the cut marker when anything was left out.
   */
  async append(message: TaskLogMessage, limitBytes: number): Promise<TaskLogAppend> {
    const runner = this.dataSource.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    try {
      const [tryRow]: Array<{ kept: string; dropped: string; limit: string; seen: boolean }> = await runner.query(
        `INSERT INTO granule_task_log_tries (run_id, task_key, try, node, limit_bytes)
              VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (run_id, task_key, try) DO UPDATE SET node = granule_task_log_tries.node
         RETURNING kept_bytes::text AS kept, dropped_bytes::text AS dropped, limit_bytes::text AS limit,
                   $6 = ANY(stored_seqs) AS seen`,
        [message.runId, message.key, message.try, message.node, limitBytes, message.seq],
      );
      if (tryRow.seen) {
        await runner.commitTransaction();
        return { stored: false, keptBytes: 0, droppedBytes: 0, records: [] };
      }
      const limit = Number(tryRow.limit);
      const chunks = message.chunks.map((c) => ({ ...c, data: withoutNul(c.data) }));
      const fit = fitTaskLog(chunks, Number(tryRow.kept), limit);
      const droppedBytes = fit.droppedBytes + (message.cut?.droppedBytes ?? 0);
      const now = Date.now();
      const rows: LogRow[] = [];
      const totalDropped = Number(tryRow.dropped) + droppedBytes;
      const cut = message.end === true && totalDropped > 0;
      // The try's counts first: they need no ids, so the lock below is held for less.
      await runner.query(
        `UPDATE granule_task_log_tries
            SET kept_bytes = kept_bytes + $4, dropped_bytes = dropped_bytes + $5,
                stored_seqs = array_append(stored_seqs, $6)
          WHERE run_id = $1 AND task_key = $2 AND try = $3`,
        [message.runId, message.key, message.try, fit.keptBytes, droppedBytes, message.seq],
      );
      // Ids in the order they become visible: a follower pages by id (`afterId`), and an id
      // given before another but committed after it would be skipped. Writers (every
      // orchestrator's log intake) take their ids one transaction at a time, until commit.
      if (fit.kept.length > 0 || cut) await runner.query('SELECT pg_advisory_xact_lock($1)', [TASK_LOG_ID_LOCK]);
      if (fit.kept.length > 0) {
        rows.push(
          ...(await runner.query(
            `INSERT INTO granule_task_logs (run_id, node, task_key, try, stream, at, data)
           SELECT $1, $2, $3, $4, u.stream, to_timestamp(u.at / 1000.0), u.data
             FROM unnest($5::text[], $6::float8[], $7::text[]) WITH ORDINALITY AS u(stream, at, data, n)
            ORDER BY u.n
           RETURNING ${RECORD_COLUMNS}`,
            [
              message.runId,
              message.node,
              message.key,
              message.try,
              fit.kept.map((c) => c.stream),
              fit.kept.map((c) => (Number.isFinite(c.at) ? c.at : now)),
              fit.kept.map((c) => c.data),
            ],
          )),
        );
      }
      if (cut) {
        rows.push(
          ...(await runner.query(
            `INSERT INTO granule_task_logs (run_id, node, task_key, try, stream, at, data, cut_limit, cut_dropped)
           VALUES ($1, $2, $3, $4, 'cut', now(), '', $5, $6)
           RETURNING ${RECORD_COLUMNS}`,
            [
              message.runId,
              message.node,
              message.key,
              message.try,
              Math.min(limit, message.cut?.limitBytes ?? limit),
              totalDropped,
            ],
          )),
        );
      }
      await runner.commitTransaction();
      const records = rows.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1)).map(recordOf);
      return { stored: true, keptBytes: fit.keptBytes, droppedBytes, records };
    } catch (err) {
      await runner.rollbackTransaction().catch(() => undefined);
      throw err;
    } finally {
      await runner.release();
    }
  }

  /** Records of the runs in the order they were stored, after `afterId`; `more` when the limit cut the answer. */
  async read(q: TaskLogQuery): Promise<{ records: TaskLogRecord[]; more: boolean }> {
    // `l.id`, the number: the selected `id` is its text, which would sort 10 before 9.
    const where = ['run_id = ANY($1)', 'l.id > $2'];
    const values: unknown[] = [q.runIds, q.afterId ?? '0'];
    if (q.node !== undefined) {
      values.push(q.node);
      where.push(`node = $${values.length}`);
    }
    if (q.task !== undefined) {
      values.push(`${q.task}@`);
      where.push(`left(task_key, length($${values.length})) = $${values.length}`);
    }
    if (q.try !== undefined) {
      values.push(q.try);
      where.push(`try = $${values.length}`);
    }
    if (q.stderrOnly) where.push(`stream <> 'stdout'`);
    values.push(q.limit + 1);
    const rows: LogRow[] = await this.dataSource.query(
      `SELECT ${RECORD_COLUMNS}
         FROM granule_task_logs l WHERE ${where.join(' AND ')} ORDER BY l.id LIMIT $${values.length}`,
      values,
    );
    const more = rows.length > q.limit;
    return {
      records: rows.slice(0, q.limit).map(recordOf),
      more,
    };
  }
}
