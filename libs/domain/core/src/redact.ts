/** `postgres://user:secret@host/db` → `postgres://user:***@host/db` (every URL of a list), for messages and logs. */
export function redactUrl(url: string): string {
  return url.replace(/([a-z][a-z0-9+.-]*:\/\/[^:/@,\s]*):[^@/,\s]*@/gi, '$1:***@');
}
