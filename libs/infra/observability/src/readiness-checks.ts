/**
 * One dependency a service needs to do its work. `probe` resolves when the dependency answers
 * and rejects (or times out) when it does not.
 */
export interface ReadinessCheck {
  /** Names the dependency in `/readyz` answers: `nats`, `postgres`, `redis`. */
  name: string;
  probe: () => Promise<unknown>;
}

/** The outcome of one check: `ok`, how long it took, and the reason when it failed. */
export interface CheckResult {
  ok: boolean;
  ms: number;
  error?: string;
}

/** What `/readyz` answers: `ready` only when every check passed; `failing` names the others in check order. */
export interface ReadinessReport {
  status: 'ready' | 'unready';
  checks: Record<string, CheckResult>;
  failing: string[];
}

/** Default time a check may take before it counts as failed. */
export const DEFAULT_CHECK_TIMEOUT_MS = 2000;

/** NATS: a flush round-trip to the server (the connection is up and the server answers). */
export function natsCheck(connection: { flush(): Promise<void>; isClosed(): boolean }): ReadinessCheck {
  return {
    name: 'nats',
    probe: async () => {
      if (connection.isClosed()) throw new Error('connection closed');
      await connection.flush();
    },
  };
}

/** PostgreSQL: `SELECT 1` through the service's pool (a TypeORM DataSource or a pg Pool/Client). */
export function postgresCheck(database: { query(sql: string): Promise<unknown> }): ReadinessCheck {
  return { name: 'postgres', probe: () => database.query('SELECT 1') };
}

/** Redis: `PING` answered with `PONG`. */
export function redisCheck(redis: { ping(): Promise<string> }): ReadinessCheck {
  return {
    name: 'redis',
    probe: async () => {
      const answer = await redis.ping();
      if (answer !== 'PONG') throw new Error(`PING answered ${JSON.stringify(answer)}`);
    },
  };
}

/**
 * Runs every check at once, each limited to `timeoutMs`, and reports them all (not only the first
 * failure). A check that does not settle in time fails with `timed out after <ms> ms`.
 */
export async function runReadinessChecks(
  checks: readonly ReadinessCheck[],
  timeoutMs = DEFAULT_CHECK_TIMEOUT_MS,
): Promise<ReadinessReport> {
  const results = await Promise.all(checks.map((check) => runOne(check, timeoutMs)));
  const report: ReadinessReport = { status: 'ready', checks: {}, failing: [] };
  checks.forEach((check, i) => {
    report.checks[check.name] = results[i];
    if (!results[i].ok) report.failing.push(check.name);
  });
  if (report.failing.length > 0) report.status = 'unready';
  return report;
}

async function runOne(check: ReadinessCheck, timeoutMs: number): Promise<CheckResult> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([Promise.resolve().then(check.probe), timeout]);
    return { ok: true, ms: elapsed(started) };
  } catch (err) {
    return { ok: false, ms: elapsed(started), error: reasonOf(err) };
  } finally {
    clearTimeout(timer);
  }
}

const elapsed = (started: number): number => Math.round(performance.now() - started);

// An AggregateError (one try per address) has no message of its own. Duck-typed: errors made
// in another realm (node internals seen from a jest VM) fail `instanceof Error`.
function reasonOf(err: unknown): string {
  if (typeof err !== 'object' || err === null) return String(err);
  const e = err as { message?: unknown; code?: unknown; name?: unknown; errors?: unknown };
  if (Array.isArray(e.errors) && e.errors.length > 0 && !e.message) return reasonOf(e.errors[0]);
  if (typeof e.message === 'string' && e.message !== '') return e.message;
  return String(e.code ?? e.name ?? err);
}
