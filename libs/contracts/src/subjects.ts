/**
 * Every NATS subject and JetStream stream of the execution path. Subjects are dotted so
 * wildcards and queue groups work; `prefix` (default `granule`) lets test suites and several
 * installations share one NATS server.
 */
export const DEFAULT_SUBJECT_PREFIX = 'granule';

export function executionSubjects(prefix = DEFAULT_SUBJECT_PREFIX) {
  const p = prefix;
  const stream = (name: string): string => `${p.replace(/[^A-Za-z0-9]/g, '_').toUpperCase()}_${name}`;
  return {
    /** Operator commands (JetStream, survive an orchestrator restart). */
    commands: {
      stream: stream('COMMANDS'),
      all: `${p}.cmd.>`,
      startDeployment: `${p}.cmd.deployment.start`,
      stopDeployment: `${p}.cmd.deployment.stop`,
      resumeDeployment: `${p}.cmd.deployment.resume`,
      retryFailed: `${p}.cmd.deployment.retry`,
      /** Durable consumer the orchestrators share (work queue). */
      consumer: 'orchestrator',
      /** Core NATS: the orchestrator's answer to a command (outside `cmd.>`, so the stream does not keep it). */
      replyFor: (commandId: string): string => `${p}.reply.cmd.${commandId}`,
    },
    /** Orchestrator → agent task dispatch (JetStream work queue, one filtered consumer per agent). */
    dispatch: {
      stream: stream('DISPATCH'),
      all: `${p}.dispatch.>`,
      forNode: (nodeUid: string): string => `${p}.dispatch.${nodeUid}`,
      consumerFor: (nodeUid: string): string => `agent-${nodeUid.replace(/[^A-Za-z0-9_-]/g, '_')}`,
    },
    /**
     * Agent → orchestrator task progress and results (JetStream, one durable consumer):
     * `<prefix>.result.<run>.<node>`. The subject names the node so that NATS lets an agent
     * publish only its own node's results, and the orchestrator takes a result for node X only
     * from X's subject.
     */
    results: {
      stream: stream('RESULTS'),
      all: `${p}.result.>`,
      forTask: (runId: string, nodeUid: string): string => `${p}.result.${runId}.${nodeUid}`,
      /** Every result of one run (a filter). */
      forRun: (runId: string): string => `${p}.result.${runId}.>`,
      /** Every result one node may publish (its permission). */
      fromNode: (nodeUid: string): string => `${p}.result.*.${nodeUid}`,
      /** The node a result subject names, or undefined for a subject of another shape. */
      nodeOf: (subject: string): string | undefined => {
        const rest = subject.startsWith(`${p}.result.`) ? subject.slice(`${p}.result.`.length).split('.') : [];
        return rest.length === 2 && rest[1] !== '' ? rest[1] : undefined;
      },
      consumer: 'orchestrator',
    },
    /** Live task output, best effort (core NATS): `<prefix>.output.<run>.<node>`. */
    output: {
      all: `${p}.output.>`,
      forRun: (runId: string): string => `${p}.output.${runId}.>`,
      forTask: (runId: string, nodeUid: string): string => `${p}.output.${runId}.${nodeUid}`,
    },
    /**
     * Task logs (ADR 0030): agents publish each try's output on `<prefix>.log.<run>.<node>`
     * (JetStream stream LOGS, so it survives a crash on the way; core subscribers see it live);
     * the orchestrators' shared consumer keeps it in PostgreSQL.
     */
    logs: {
      stream: stream('LOGS'),
      all: `${p}.log.>`,
      forRun: (runId: string): string => `${p}.log.${runId}.>`,
      forTask: (runId: string, nodeUid: string): string => `${p}.log.${runId}.${nodeUid}`,
      /** Every log subject one node may publish (its permission). */
      fromNode: (nodeUid: string): string => `${p}.log.*.${nodeUid}`,
      /** The node a log subject names, or undefined for a subject of another shape. */
      nodeOf: (subject: string): string | undefined => {
        const rest = subject.startsWith(`${p}.log.`) ? subject.slice(`${p}.log.`.length).split('.') : [];
        return rest.length === 2 && rest[1] !== '' ? rest[1] : undefined;
      },
      /** Durable consumer the orchestrators share. */
      consumer: 'task-log-writer',
    },
    /** Agent lifecycle (core NATS request/reply to the orchestrator). */
    agents: {
      register: `${p}.agent.register`,
      /** An agent's heartbeat (core NATS): `<prefix>.agent.heartbeat.<node>`; the orchestrator keeps presence from it. */
      heartbeatFrom: (nodeUid: string): string => `${p}.agent.heartbeat.${nodeUid}`,
      /** Every agent's heartbeat. */
      heartbeats: `${p}.agent.heartbeat.*`,
      /** The node a heartbeat subject names, or undefined for another subject. */
      heartbeatNodeOf: (subject: string): string | undefined =>
        subject.startsWith(`${p}.agent.heartbeat.`) ? subject.slice(`${p}.agent.heartbeat.`.length) : undefined,
      /** An agent's report of a dispatch it refused (not signed by the orchestrator): `<prefix>.alert.<node>`. */
      alertFrom: (nodeUid: string): string => `${p}.alert.${nodeUid}`,
      /** What the orchestrator listens to (`alert.<node>`; the pattern relative to the prefix). */
      alertPattern: 'alert.*',
    },
    /** Run history queries, answered by the orchestrators (request/reply, queue group). */
    runs: {
      list: `${p}.runs.list`,
      events: `${p}.runs.events`,
      show: `${p}.runs.show`,
      graph: `${p}.runs.graph`,
      tasks: `${p}.runs.tasks`,
      logs: `${p}.runs.logs`,
    },
    /**
     * Each orchestrator process answers on its incarnation's subject while it lives: a restarted
     * replica asks its previous incarnation there, and "no responders" proves it gone (ADR 0028).
     */
    orchestrators: {
      incarnation: (incarnation: string): string => `${p}.orchestrator.incarnation.${incarnation}`,
    },
    /**
     * Plan inputs too large for one NATS message (a JetStream object store bucket, its stream
     * `OBJ_<bucket>`): the CLI stores them, a command names them by digest (ADR 0029).
     */
    inputs: {
      bucket: stream('INPUTS'),
    },
    /**
     * The deployment files of installed plugins and releases, one deterministic tar per object
     * named by its SHA-256 (hex): config-store keeps them, agents fetch them (ADR 0026).
     */
    artifacts: {
      bucket: stream('ARTIFACTS'),
    },
    /** graph-planner request/reply. */
    planner: {
      plan: `${p}.planner.plan`,
    },
    /**
     * Committed events from the event log's outbox: `<prefix>.events.<streamType>.<streamId>`,
     * kept in the JetStream stream EVENTS (the read spine, ADR 0033): readers follow it with
     * ordered consumers from a position, and catch up from the log when it no longer holds it.
     */
    events: {
      stream: stream('EVENTS'),
      all: `${p}.events.>`,
      forRun: (runId: string): string => `${p}.events.run.run-${runId}`,
    },
    /**
     * Task output as the orchestrators stored it: after a LOGS message's records are committed,
     * they are published, with their record ids, on `<prefix>.logs.stored.<run>` (one message
     * per agent message, `Nats-Msg-Id` = its first record id) and kept in the JetStream stream
     * STORED_LOGS, which `granule logs --follow` reads with an ordered consumer (ADR 0033).
     */
    storedLogs: {
      stream: stream('STORED_LOGS'),
      all: `${p}.logs.stored.>`,
      forRun: (runId: string): string => `${p}.logs.stored.${runId}`,
    },
  };
}

export type ExecutionSubjects = ReturnType<typeof executionSubjects>;

/** Redis keys. */
export function redisKeys(prefix = DEFAULT_SUBJECT_PREFIX) {
  return {
    /** Agent presence; set with a TTL by heartbeats, gone when the agent stops beating. */
    presence: (nodeUid: string): string => `${prefix}:presence:${nodeUid}`,
    presencePattern: `${prefix}:presence:*`,
    /** Which orchestrator drives a run: SET NX PX, renewed. */
    runLease: (runId: string): string => `${prefix}:lease:run:${runId}`,
  };
}
