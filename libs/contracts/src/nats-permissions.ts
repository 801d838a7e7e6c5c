import { CONFIG_OPERATIONS, configSubject, configSubjectWildcard } from './config-store/config-store.api';
import { executionSubjects } from './subjects';

/**
 * Who may publish and subscribe where on NATS (docs/architecture.md, "Security model"). Every
 * identity gets the least its role needs; the NATS server enforces it, so a host that is taken
 * over can do no more than its own node's agent may.
 */
export const NATS_ROLES = [
  'orchestrator',
  'config-store',
  'graph-planner',
  'operator',
  'viewer',
  'agent',
  'admin',
] as const;
export type NatsRole = (typeof NATS_ROLES)[number];

export interface SubjectPermissions {
  pub: string[];
  sub: string[];
  /** May answer the requests it receives (NATS allow_responses), whatever their reply subject. */
  respond: boolean;
}

export interface PermissionContext {
  prefix: string;
  /** The identity's own inbox prefix (see `inboxPrefixFor`); replies reach it there only. */
  inboxPrefix: string;
  /** The node an agent identity is bound to. */
  node?: string;
}

/**
 * The inbox prefix of an identity: `_INBOX_<name>`. Each identity may subscribe only to its own
 * inbox, so no party can read another's replies (JetStream pull deliveries are replies too).
 */
export function inboxPrefixFor(identity: string): string {
  return `_INBOX_${identity.replace(/[^A-Za-z0-9_-]/g, '_')}`;
}

/** Read-only config-store operations: `ping`, `*.list`, `*.get`. */
export const CONFIG_READ_OPERATIONS = CONFIG_OPERATIONS.filter(
  (op) => op === 'ping' || op.endsWith('.list') || op.endsWith('.get'),
);

/**
 * How many messages one request's answer may take: a responder's credential may publish that
 * many to the requester's reply subject (NATS `resp.max`), and an answer is chunked into at most
 * that many (larger ones are refused with REPLY_TOO_LARGE).
 */
export const MAX_REPLY_MESSAGES = 64;

/**
 * Following the EVENTS and STORED_LOGS streams (ADR 0033) with ordered consumers: the JetStream
 * API's info, the streams' info, and creating, pulling from, asking about and deleting an
 * ephemeral consumer on those streams alone. Nothing that stores, purges or deletes messages.
 * Deliveries come to the identity's own inbox.
 */
export function eventStreamReader(prefix: string): string[] {
  const s = executionSubjects(prefix);
  return [
    '$JS.API.INFO',
    ...[s.events.stream, s.storedLogs.stream].flatMap((stream) => [
      `$JS.API.STREAM.INFO.${stream}`,
      `$JS.API.CONSUMER.CREATE.${stream}.>`,
      `$JS.API.CONSUMER.MSG.NEXT.${stream}.*`,
      `$JS.API.CONSUMER.INFO.${stream}.*`,
      `$JS.API.CONSUMER.DELETE.${stream}.*`,
    ]),
  ];
}

/**
 * Reading the objects of bucket `bucket` (a JetStream object store, stream `OBJ_<bucket>`): the
 * stream's info, an object's info (its last metadata message) and an ordered consumer of its
 * chunks, asked for, pulled from and deleted again. Nothing that writes, purges or deletes.
 */
export function objectStoreReader(bucket: string): string[] {
  const stream = `OBJ_${bucket}`;
  return [
    `$JS.API.STREAM.INFO.${stream}`,
    `$JS.API.STREAM.MSG.GET.${stream}`,
    `$JS.API.CONSUMER.CREATE.${stream}`,
    `$JS.API.CONSUMER.CREATE.${stream}.>`,
    `$JS.API.CONSUMER.MSG.NEXT.${stream}.*`,
    `$JS.API.CONSUMER.INFO.${stream}.*`,
    `$JS.API.CONSUMER.DELETE.${stream}.*`,
  ];
}

export function permissionsFor(role: NatsRole, ctx: PermissionContext): SubjectPermissions {
  const p = ctx.prefix;
  const s = executionSubjects(p);
  const inbox = `${ctx.inboxPrefix}.>`;
  switch (role) {
    case 'admin':
      return { pub: ['>'], sub: ['>'], respond: true };
    case 'orchestrator':
      // Drives runs: consumes commands and results, publishes dispatches and events, owns the streams.
      return { pub: [`${p}.>`, '$JS.API.>', '$JS.ACK.>'], sub: [`${p}.>`, inbox], respond: true };
    case 'config-store': {
      // Keeps the artifacts bucket (ADR 0026): creates it, stores, reads and deletes deployment
      // files (an object's chunks are purged by subject). No other stream: not the dispatches,
      // commands or events, which it can neither read back, purge nor delete.
      // Its HTTP API reads runs (ADR 0032): the orchestrators' run queries, and the run events and
      // task logs as they are published, which wake its Server-Sent Event streams.
      const artifacts = s.artifacts.bucket;
      return {
        pub: [
          '$JS.API.INFO',
          ...objectStoreReader(artifacts),
          `$JS.API.STREAM.CREATE.OBJ_${artifacts}`,
          `$JS.API.STREAM.PURGE.OBJ_${artifacts}`,
          `${p}.config.>`,
          `$O.${artifacts}.>`,
          s.runs.list,
          s.runs.show,
          s.runs.events,
          s.runs.tasks,
          s.runs.logs,
        ],
        sub: [configSubjectWildcard(p), s.events.all, s.logs.all, inbox],
        respond: true,
      };
    }
    case 'graph-planner':
      // Reads config, and the inputs an operator stored for a plan (ADR 0029): no other stream.
      return {
        pub: [
          ...CONFIG_READ_OPERATIONS.map((op) => configSubject(p, op)),
          '$JS.API.INFO',
          ...objectStoreReader(s.inputs.bucket),
        ],
        sub: [s.planner.plan, inbox],
        respond: true,
      };
    case 'operator': {
      // Storing inline inputs too large for a command (ADR 0029) and the deployment files of a
      // plugin it installs (ADR 0026): a bucket's info, an object's info (is it there already),
      // its chunks and its metadata. No delete, no purge.
      const inputs = s.inputs.bucket;
      const artifacts = s.artifacts.bucket;
      return {
        pub: [
          s.commands.all,
          `${p}.runs.>`,
          configSubjectWildcard(p),
          s.planner.plan,
          '$JS.API.INFO',
          `$JS.API.STREAM.INFO.${s.commands.stream}`,
          ...eventStreamReader(p).filter((subject) => subject !== '$JS.API.INFO'),
          `$JS.API.STREAM.INFO.OBJ_${inputs}`,
          `$JS.API.STREAM.MSG.GET.OBJ_${inputs}`,
          `$O.${inputs}.C.*`,
          `$O.${inputs}.M.*`,
          `$JS.API.STREAM.INFO.OBJ_${artifacts}`,
          `$JS.API.STREAM.MSG.GET.OBJ_${artifacts}`,
          `$O.${artifacts}.C.*`,
          `$O.${artifacts}.M.*`,
        ],
        sub: [s.events.all, s.output.all, s.logs.all, `${p}.reply.cmd.*`, inbox],
        respond: false,
      };
    }
    case 'viewer':
      return {
        pub: [
          s.runs.list,
          s.runs.show,
          s.runs.events,
          s.runs.graph,
          s.runs.tasks,
          s.runs.logs,
          ...CONFIG_READ_OPERATIONS.map((op) => configSubject(p, op)),
          ...eventStreamReader(p),
        ],
        sub: [s.events.all, s.output.all, s.logs.all, inbox],
        respond: false,
      };
    case 'agent': {
      const node = ctx.node;
      if (!node) throw new Error('an agent identity is bound to a node');
      const stream = s.dispatch.stream;
      const consumer = s.dispatch.consumerFor(node);
      // Reading a package from the artifacts bucket (ADR 0026): the bucket's and the object's
      // info, and an ordered consumer of the object's chunks. Nothing that writes or deletes.
      return {
        pub: [
          s.results.fromNode(node),
          `${p}.output.*.${node}`,
          s.logs.fromNode(node),
          s.agents.register,
          s.agents.heartbeatFrom(node),
          s.agents.alertFrom(node),
          '$JS.API.INFO',
          `$JS.API.CONSUMER.INFO.${stream}.${consumer}`,
          `$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`,
          `$JS.ACK.${stream}.${consumer}.>`,
          ...objectStoreReader(s.artifacts.bucket),
        ],
        sub: [inbox],
        respond: false,
      };
    }
  }
}
