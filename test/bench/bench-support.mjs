// What the benchmark scripts share: waiting for a condition, for a started service's ready
// line, and one-off statements as the database administrator.
import { existsSync, readFileSync } from 'node:fs';
import pg from 'pg';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Resolves with the first truthy value of `check`, asked every `everyMs`; throws after `timeoutMs`. */
export async function waitFor(what, check, timeoutMs, everyMs = 100) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Waits until a started service's log has `readyText`; throws with the log's end if it exits first. */
export async function waitUntilReady({ child, logFile }, name, readyText, timeoutMs = 60_000) {
  await waitFor(
    `${name} to start`,
    () => {
      if (child.exitCode !== null)
        throw new Error(`${name} exited at start: ${readFileSync(logFile, 'utf8').slice(-1500)}`);
      return existsSync(logFile) && readFileSync(logFile, 'utf8').includes(readyText);
    },
    timeoutMs,
  );
  return child;
}

/** Runs one statement on its own connection (CREATE / DROP DATABASE, statistics). */
export async function adminQuery(connectionString, sql, params) {
  const c = new pg.Client({ connectionString });
  await c.connect();
  try {
    return await c.query(sql, params);
  } finally {
    await c.end();
  }
}

/** SIGTERMs every child, SIGKILLs those still there after `killAfterMs`, and waits for all to exit. */
export async function stopChildren(children, killAfterMs) {
  const exits = [...children].map(
    (c) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', r))),
  );
  for (const c of children) c.kill('SIGTERM');
  const timer = setTimeout(() => {
    for (const c of children) c.kill('SIGKILL');
  }, killAfterMs);
  await Promise.all(exits);
  clearTimeout(timer);
}
