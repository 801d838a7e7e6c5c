/**
 * Polls `condition` every `everyMs` until it returns a truthy value and returns that value. Past
 * `timeoutMs` it throws an error that names `what`, so a failed wait says what never happened.
 * The one polling helper of the integration and end-to-end tests.
 */
export async function waitUntil<T>(
  condition: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  timeoutMs = 10_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
