import type { IncomingMessage, ServerResponse } from 'node:http';
import pino from 'pino';
import type { DestinationStream, Logger } from 'pino';
import { GranuleError } from '@granule/core';

/** `json`: one JSON object a line (the default, what log shippers read); `text`: one readable line for a terminal. */
export const LOG_FORMATS = ['json', 'text'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface LogSettings {
  level: LogLevel;
  format: LogFormat;
}

/** GRANULE_LOG_LEVEL or GRANULE_LOG_FORMAT holds a value the logger does not know. */
export class LogSettingsError extends GranuleError<'INVALID_LOG_SETTINGS'> {}

/**
 * Reads GRANULE_LOG_LEVEL (default `info`) and GRANULE_LOG_FORMAT (`json` or `text`; default
 * `text` when stdout is a terminal, else `json`). Throws `LogSettingsError` naming the variable,
 * what it expects and what it found.
 */
export function readLogSettings(
  env: Readonly<Record<string, string | undefined>>,
  stdoutIsTty = process.stdout.isTTY === true,
): LogSettings {
  const level = (env['GRANULE_LOG_LEVEL'] || 'info').toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(level))
    throw new LogSettingsError(
      'INVALID_LOG_SETTINGS',
      `GRANULE_LOG_LEVEL: expected one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(env['GRANULE_LOG_LEVEL'])}`,
    );
  const format = (env['GRANULE_LOG_FORMAT'] || (stdoutIsTty ? 'text' : 'json')).toLowerCase();
  if (!(LOG_FORMATS as readonly string[]).includes(format))
    throw new LogSettingsError(
      'INVALID_LOG_SETTINGS',
      `GRANULE_LOG_FORMAT: expected json or text, got ${JSON.stringify(env['GRANULE_LOG_FORMAT'])}`,
    );
  return { level: level as LogLevel, format: format as LogFormat };
}

export interface LoggerOptions {
  /** Default `info`. */
  level?: string;
  /** Default `json`; services pass `readLogSettings(env).format`. */
  format?: LogFormat;
  /** Fields on every line besides `service` and `pid`, e.g. `{ node }` in an agent. */
  bindings?: Record<string, unknown>;
  /**
   * Write each line before the call returns (default false: pino's buffered writer). The agent
   * sets it so its last lines before a crash are out, and a stalled journald stalls it instead
   * of growing its memory.
   */
  sync?: boolean;
  /** Where lines go (tests); default stdout. */
  destination?: { write(line: string): unknown };
}

/**
 * Keys whose values never reach a log line, at the top level or one object down (pino-http's
 * `req.headers.authorization` included). Values that are secrets by content, such as a URL's
 * password inside a message, are masked by `maskSecretsInText`.
 */
export const REDACTED_LOG_KEYS = [
  'password',
  'token',
  'apiToken',
  'secret',
  'secrets',
  'authorization',
  'cookie',
  'nkeySeed',
  'creds',
  'privateKey',
] as const;
const REDACT_PATHS = [
  ...REDACTED_LOG_KEYS,
  ...REDACTED_LOG_KEYS.map((k) => `*.${k}`),
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-granule-token"]',
  'res.headers["set-cookie"]',
];
export const REDACTED = '[redacted]';

/** Credentials written into a URL (`nats://user:pass@host`, `postgres://u:p@db`) and NATS nkey seeds. */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/@'"]+)@/gi;
const NKEY_SEED = /\bS[UAONCXP][A-Z2-7]{56}\b/g;

/** A message with URL credentials and nkey seeds masked; other text unchanged. */
export function maskSecretsInText(text: string): string {
  if (!text.includes('@') && !/S[UAONCXP][A-Z2-7]{56}/.test(text)) return text;
  return text
    .replace(URL_USERINFO, (_, scheme: string, userinfo: string) => {
      const colon = userinfo.indexOf(':');
      return `${scheme}${colon >= 0 ? `${userinfo.slice(0, colon)}:***` : '***'}@`;
    })
    .replace(NKEY_SEED, REDACTED);
}

/**
 * The one logger factory of the Granule services (pino): JSON lines with ISO `time`, `level` as
 * a name, `service`, `pid`, the bindings, `msg`; or, with `format: 'text'`, the same record as
 * one readable line (`formatLogLine`). Lines about a run, a node or a task carry `runId`,
 * `node` and `task` (see `forTask`). Secret-named keys are redacted and URL credentials in
 * messages masked, whatever the caller passes.
 */
export function createLogger(service: string, options: LoggerOptions | string = {}): Logger {
  const o: LoggerOptions = typeof options === 'string' ? { level: options } : options;
  const json: { write(line: string): unknown } = o.destination ?? pino.destination({ dest: 1, sync: o.sync ?? false });
  const destination: DestinationStream =
    o.format === 'text' ? { write: (line: string) => json.write(formatLogLine(line)) } : (json as DestinationStream);
  return pino(
    {
      level: o.level ?? 'info',
      base: { service, pid: process.pid, ...o.bindings },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      hooks: {
        logMethod(args, method) {
          const masked = args.map((a) => (typeof a === 'string' ? maskSecretsInText(a) : a)) as typeof args;
          method.apply(this, masked);
        },
      },
    },
    destination,
  );
}

/** What a line is about: the run, the task key (`task@node`) and/or the node. */
export interface LogSubject {
  runId?: string;
  /** `task@node`; gives `task` and `node` when they are not given. */
  key?: string;
  task?: string;
  node?: string;
}

/** A child logger whose lines carry `runId`, `task` and `node` (and `key` when given). */
export function forTask<L extends Pick<Logger, 'child'>>(logger: L, subject: LogSubject): ReturnType<L['child']> {
  return logger.child(taskBindings(subject)) as ReturnType<L['child']>;
}

/** The fields `forTask` binds: `key` `a@n1` gives `task: 'a'` and `node: 'n1'`. */
export function taskBindings(subject: LogSubject): Record<string, string> {
  const at = subject.key?.lastIndexOf('@') ?? -1;
  const task = subject.task ?? (subject.key && at > 0 ? subject.key.slice(0, at) : subject.key);
  const node = subject.node ?? (subject.key && at > 0 ? subject.key.slice(at + 1) : undefined);
  const out: Record<string, string> = {};
  if (subject.runId !== undefined) out['runId'] = subject.runId;
  if (subject.key !== undefined) out['key'] = subject.key;
  if (task !== undefined) out['task'] = task;
  if (node !== undefined) out['node'] = node;
  return out;
}

const HEAD_FIELDS = new Set(['time', 'level', 'service', 'pid', 'hostname', 'msg', 'runId', 'task', 'node', 'key']);

/**
 * One JSON log line as a terminal line:
 * `12:03:04.567 INFO  orchestrator run=r1 task=a node=n1 | task started attempt=2 err="boom"`.
 * A line that is not a JSON object is returned as it is.
 */
export function formatLogLine(line: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (record === null || typeof record !== 'object' || Array.isArray(record)) return line;
  const time = typeof record['time'] === 'string' ? record['time'].slice(11, 23) : '';
  const level = String(record['level'] ?? '').toUpperCase();
  const about = [
    record['runId'] !== undefined ? `run=${value(record['runId'])}` : '',
    record['task'] !== undefined ? `task=${value(record['task'])}` : '',
    record['node'] !== undefined ? `node=${value(record['node'])}` : '',
  ].filter(Boolean);
  const rest = Object.entries(record)
    .filter(([k]) => !HEAD_FIELDS.has(k))
    .map(([k, v]) => `${k}=${value(v)}`);
  const head = [time, level.padEnd(5), String(record['service'] ?? ''), ...about].filter(Boolean).join(' ');
  const msg = record['msg'] === undefined ? '' : String(record['msg']);
  return `${head} | ${[msg, ...rest].filter(Boolean).join(' ')}\n`;
}

function value(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  return JSON.stringify(v);
}

export type { Logger };

/**
 * `LoggerModule.forRoot(...)` parameters of nestjs-pino for a service's logger: Nest's own lines
 * (`context` field) and every HTTP request (method, url, status, time) go through the same pino
 * instance, so its format, bindings and redaction hold for them too. Headers are not logged.
 * `nestLevel` raises the level of those lines only (an agent wants no start-up chatter).
 */
export function nestLoggerParams(
  logger: Logger,
  options: {
    nestLevel?: LogLevel;
    /** Fields a request's line adds (pino-http's `customProps`, asked at the start and once answered). */
    callProps?: (req: IncomingMessage, res: ServerResponse) => Record<string, unknown>;
  } = {},
) {
  return {
    pinoHttp: {
      ...(options.callProps ? { customProps: options.callProps } : {}),
      logger: options.nestLevel ? logger.child({}, { level: options.nestLevel }) : logger,
      quietReqLogger: true,
      serializers: {
        req: (req: { id?: unknown; method?: string; url?: string }) => ({
          id: req.id,
          method: req.method,
          url: req.url === undefined ? undefined : maskSecretsInText(req.url),
        }),
        res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
      },
    },
  };
}
