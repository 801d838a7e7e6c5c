import { constants as osConstants } from 'node:os';
import type { LaunchPlan } from './launch-plan';
import type { OutputStream } from './task-runner.types';

/**
 * The frames `granule-spawn` (native/granule-spawn.c) reads on its stdin and writes on its
 * stdout. Every frame is `u32 length (of what follows), u8 type, u32 id, payload`, integers
 * little-endian.
 *
 * Request `S` (launch): u32 flags (bit 0: new session), u32 drain ms, u32 argc, u32 envc, then
 * NUL-terminated strings: file, cwd, the argc strings of argv, the envc `NAME=value` entries.
 *
 * Replies: `R` ready (id 0, once at start); `P` started (i32 pid, u64 start time, all ones when
 * unknown); `O` / `E` a chunk of stdout / stderr; `X` ended (i32 exit code or -1, i32 signal
 * number or 0, i32 errno or 0: non-zero when the process could not be started).
 */
export type HelperMessage =
  | { t: 'ready' }
  | { t: 'spawned'; id: number; pid: number; startTime?: number }
  | { t: 'out'; id: number; stream: OutputStream; data: Buffer }
  /** `startError`: the errno name (`ENOENT`, ...) when the process could not be started. */
  | { t: 'exit'; id: number; code: number | null; signal: string | null; startError?: string };

const FLAG_NEW_SESSION = 1;
const HEADER = 4 + 1 + 4;

/** The `S` frame that hands `plan` to the helper as task `id`. */
export function encodeLaunchRequest(id: number, plan: LaunchPlan): Buffer {
  const env = Object.entries(plan.env).map(([k, v]) => `${k}=${v}`);
  const body = Buffer.from(`${[plan.file, plan.cwd, ...plan.argv, ...env].join('\0')}\0`, 'utf8');
  const frame = Buffer.allocUnsafe(HEADER + 16 + body.length);
  frame.writeUInt32LE(frame.length - 4, 0);
  frame.write('S', 4, 'latin1');
  frame.writeUInt32LE(id, 5);
  frame.writeUInt32LE(plan.newSession ? FLAG_NEW_SESSION : 0, 9);
  frame.writeUInt32LE(plan.drainMs, 13);
  frame.writeUInt32LE(plan.argv.length, 17);
  frame.writeUInt32LE(env.length, 21);
  body.copy(frame, HEADER + 16);
  return frame;
}

/** Number to name, the first name where two share a number (SIGABRT, not SIGIOT; EAGAIN, not EWOULDBLOCK), as Node.js names them. */
function namesOf(constants: Record<string, number>): Map<number, string> {
  const names = new Map<number, string>();
  for (const [name, n] of Object.entries(constants)) if (!names.has(n)) names.set(n, name);
  return names;
}
const SIGNAL_NAMES = namesOf(osConstants.signals);
const ERRNO_NAMES = namesOf(osConstants.errno);
const UNKNOWN_START_TIME = 0xffffffff;

/** Turns the helper's output into messages, whatever the chunking. */
export function frameDecoder(onMessage: (m: HelperMessage) => void): (chunk: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  return (chunk) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    let at = 0;
    while (pending.length - at >= 4) {
      const length = pending.readUInt32LE(at);
      if (pending.length - at - 4 < length) break;
      const type = String.fromCharCode(pending[at + 4]);
      const id = pending.readUInt32LE(at + 5);
      const payload = pending.subarray(at + HEADER, at + 4 + length);
      at += 4 + length;
      if (type === 'R') onMessage({ t: 'ready' });
      else if (type === 'P') {
        const low = payload.readUInt32LE(4);
        const high = payload.readUInt32LE(8);
        const known = !(low === UNKNOWN_START_TIME && high === UNKNOWN_START_TIME);
        onMessage({
          t: 'spawned',
          id,
          pid: payload.readInt32LE(0),
          ...(known ? { startTime: high * 2 ** 32 + low } : {}),
        });
      } else if (type === 'O' || type === 'E') {
        onMessage({ t: 'out', id, stream: type === 'O' ? 'stdout' : 'stderr', data: Buffer.from(payload) });
      } else if (type === 'X') {
        const code = payload.readInt32LE(0);
        const signal = payload.readInt32LE(4);
        const errno = payload.readInt32LE(8);
        onMessage({
          t: 'exit',
          id,
          code: code < 0 ? null : code,
          signal: signal === 0 ? null : (SIGNAL_NAMES.get(signal) ?? `signal ${signal}`),
          ...(errno === 0 ? {} : { startError: ERRNO_NAMES.get(errno) ?? `errno ${errno}` }),
        });
      }
    }
    pending = at === pending.length ? Buffer.alloc(0) : pending.subarray(at);
  };
}
