import type { PlanReplyMessage, PlanRequestMessage, TaskDispatchMessage } from '@granule/contracts';
import type { NodeLockEvent, NodeStatusChanged, RunEvent } from '@granule/run-events';
import type { ExecutablePlan } from '@granule/deployment-run';

/** A run whose last event is not terminal. */
export interface OpenRun {
  runId: string;
  first: RunEvent;
}

/**
 * A lock event on its way to the node's lock stream (`lock-<uid>`, ADR 0024): a `NodeLocked` is
 * appended at the version the run read the stream at (0: the stream must not exist), so of two
 * runs that saw the node free only one can take it; a `NodeReleased` goes at any version.
 */
export type NodeLockAppend = NodeLockEvent & { expectedVersion: number | 'any' };

/** What a run appends to other streams with its own events: node statuses and node locks. */
export type SideEvent = NodeStatusChanged | NodeLockAppend;

/** Who holds which node, and the version of each node's lock stream the answer was read at. */
export interface NodeLockView {
  /** Node → run that holds it (a free node is absent). */
  holders: Map<string, string>;
  /** Node → version of its lock stream (absent: no stream yet, version 0). */
  versions: Map<string, number>;
}

/** The lock streams of the event log (ADR 0024). */
export interface NodeLockLog {
  /** Who holds each of `uids` now. */
  read(uids: readonly string[]): Promise<NodeLockView>;
}

/** The run streams of the event log. */
export interface RunEventLog {
  /**
   * Appends after checking the stream is at `expectedVersion` (0 = new stream); returns the new
   * version. `nodeEvents` go to their nodes' streams (statuses) and lock streams (locks) in the
   * same transaction; a lock stream not at a `NodeLocked`'s expected version fails the whole append.
   */
  append(
    runId: string,
    events: RunEvent[],
    expectedVersion: number,
    metadata?: Record<string, unknown>,
    nodeEvents?: SideEvent[],
  ): Promise<number>;
  read(runId: string): Promise<RunEvent[]>;
  /**
   * Runs whose last event is not terminal, oldest first, each with its first event (which
   * coordinator drives it: see `isStrategyParent`), so that a coordinator reads only the
   * streams of runs it may drive.
   */
  openRuns(): Promise<OpenRun[]>;
  exists(runId: string): Promise<boolean>;
  /** The run's first event (it tells a strategy run from a deployment or phase run); undefined for a run that does not exist. */
  first(runId: string): Promise<RunEvent | undefined>;
  /** The type of the run's last event, without reading its stream; undefined for a run that does not exist. */
  lastEventType(runId: string): Promise<string | undefined>;
}

/** graph-planner and the plan store. */
export interface PlanSource {
  request(request: PlanRequestMessage): Promise<PlanReplyMessage>;
  load(planId: string): Promise<ExecutablePlan>;
}

/** Task dispatch to agents (JetStream, de-duplicated by dispatchId). */
export interface Dispatcher {
  dispatch(message: TaskDispatchMessage): Promise<void>;
}

/** Which nodes have no live agent (presence keys lapsed). */
export interface Presence {
  offline(nodes: string[]): Promise<string[]>;
}

/** One orchestrator drives a run: a lease that lapses when its holder dies. */
export interface RunLease {
  acquire(runId: string): Promise<boolean>;
  renew(runId: string): Promise<boolean>;
  release(runId: string): Promise<void>;
}

export interface Clock {
  now(): Date;
}

export interface CoordinatorLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export interface CoordinatorPorts {
  log: RunEventLog;
  locks: NodeLockLog;
  plans: PlanSource;
  dispatcher: Dispatcher;
  presence: Presence;
  lease: RunLease;
  clock: Clock;
  logger: CoordinatorLogger;
}
