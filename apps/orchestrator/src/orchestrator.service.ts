import { timingSafeEqual } from 'node:crypto';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { ConsumerMessages, JetStreamClient, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Redis } from 'ioredis';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import type { DataSource } from 'typeorm';
import { GranuleError } from '@granule/core';
import { executionSubjects, nodeStreamId } from '@granule/contracts';
import type {
  AgentRegistration,
  AgentRegistrationReply,
  CommandReply,
  DeploymentCommandType,
  ExecutionSubjects,
  TaskProgressMessage,
} from '@granule/contracts';
import {
  RetryFailedCommand,
  ResumeDeploymentCommand,
  StartDeploymentCommand,
  StopDeploymentCommand,
} from '@granule/contracts/dto';
import { EventStore, NatsOutboxPublisher } from '@granule/event-store';
import { decodeJson, describeFailure, ensureExecutionStreams } from '@granule/messaging';
import { RepeatedFailureLog } from '@granule/observability';
import { RunCoordinator, StrategyCoordinator } from '@granule/run-coordination';
import type { CoordinatorPorts } from '@granule/run-coordination';
import { ConfigStoreClient } from '@granule/config-store-client';
import { PlanStore } from '@granule/plan-store';
import type { Logger } from '@granule/service-kit';
import { StoredPlanSource } from './adapters/plan-source.adapter';
import { JetStreamDispatcher } from './adapters/nats-dispatcher.adapter';
import { RedisPresence, RedisRunLease } from './adapters/redis-presence.adapter';
import { ConfigStoreStrategySource } from './adapters/strategy-source.adapter';
import { PostgresRunEventLog } from './adapters/run-event-log.adapter';
import type { OrchestratorConfig } from './orchestrator.config';
import { RunQueriesResponder } from './run-queries.responder';
import { NodePresenceWatcher } from './node-presence.watcher';
import { NodeStatusProjector } from './node-status.projector';

export interface OrchestratorDeps {
  config: OrchestratorConfig;
  nats: NatsConnection;
  redis: Redis;
  dataSource: DataSource;
  logger: Logger;
}

const COMMAND_DTOS: Record<DeploymentCommandType, new () => object> = {
  StartDeployment: StartDeploymentCommand,
  StopDeployment: StopDeploymentCommand,
  ResumeDeployment: ResumeDeploymentCommand,
  RetryFailed: RetryFailedCommand,
};

class InvalidCommandError extends GranuleError<'INVALID_COMMAND'> {}

/**
 * The orchestrator process: takes commands from the JetStream command stream, drives the runs
 * it holds the lease of (RunCoordinator), feeds them agents' results, registers agents, and
 * publishes committed events to NATS (the outbox) while it holds the outbox lease.
 */
export class OrchestratorService {
  readonly subjects: ExecutionSubjects;
  readonly coordinator: RunCoordinator;
  readonly strategies: StrategyCoordinator;
  private readonly js: JetStreamClient;
  private jsm?: JetStreamManager;
  private readonly store: EventStore;
  private readonly runLog: PostgresRunEventLog;
  private readonly resultFeeds = new Map<string, ConsumerMessages>();
  private commandFeed?: ConsumerMessages;
  private registration?: Subscription;
  private outbox?: NatsOutboxPublisher;
  private readonly nodeStatuses?: NodeStatusProjector;
  private readonly outboxLease: RedisRunLease;
  private readonly queries: RunQueriesResponder;
  private readonly presenceWatcher: NodePresenceWatcher;
  private timer?: NodeJS.Timeout;
  private ticking = false;
  // A database or broker outage is said once (then a reminder every 30 s), not at every retry.
  private readonly tickFailures: RepeatedFailureLog;
  private readonly outboxFailures: RepeatedFailureLog;
  private stopped = false;

  constructor(private readonly deps: OrchestratorDeps) {
    this.tickFailures = new RepeatedFailureLog(deps.logger, {
      failing: 'tick failed; trying again every tick',
      recovered: 'ticks work again',
      level: 'error',
      describe: describeFailure,
    });
    this.outboxFailures = new RepeatedFailureLog(deps.logger, {
      failing: 'outbox publishing failed; retrying',
      recovered: 'outbox publishing works again',
    });
    const { config, nats, redis, dataSource, logger } = deps;
    this.subjects = executionSubjects(config.subjectPrefix);
    this.js = jetstream(nats);
    this.store = new EventStore(dataSource);
    const lease = new RedisRunLease(redis, config.subjectPrefix, config.instanceId, config.leaseMs);
    this.outboxLease = lease;
    const planStore = new PlanStore(dataSource);
    const plans = new StoredPlanSource(nats, config.subjectPrefix, planStore, {
      onWaiting: (message, runId) => this.deps.logger.warn({ runId }, message),
    });
    // One tick reads each presence key once: the watcher reuses what the runs' health checks read.
    const presence = new RedisPresence(redis, config.subjectPrefix, {
      maxAgeMs: config.tickMs / 2,
      ttlMs: config.presenceTtlSeconds * 1000,
    });
    this.presenceWatcher = new NodePresenceWatcher(presence, this.store, dataSource);
    this.queries = new RunQueriesResponder(nats, this.subjects, this.store, dataSource, plans, planStore);
    this.runLog = new PostgresRunEventLog(this.store);
    const ports: CoordinatorPorts = {
      log: this.runLog,
      plans,
      dispatcher: new JetStreamDispatcher(this.js, config.subjectPrefix),
      presence,
      lease,
      clock: { now: () => new Date() },
      logger: {
        info: (msg, fields) => logger.info(fields ?? {}, msg),
        warn: (msg, fields) => logger.warn(fields ?? {}, msg),
        error: (msg, fields) => logger.error(fields ?? {}, msg),
      },
    };
    this.coordinator = new RunCoordinator(ports, { limits: { maxBusyNodes: config.maxBusyNodes } });
    const configStore = new ConfigStoreClient(nats, { prefix: config.subjectPrefix });
    this.strategies = new StrategyCoordinator(ports, new ConfigStoreStrategySource(configStore), this.coordinator);
    if (config.nodeStatusSync) this.nodeStatuses = new NodeStatusProjector(this.store, configStore, logger);
    this.coordinator.onRunEnded = (runId, outcome, request) => {
      if (request?.childOf) void this.strategies.childEnded(runId, outcome);
    };
  }

  async start(): Promise<void> {
    const { config, nats, logger } = this.deps;
    this.jsm = await jetstreamManager(nats);
    await ensureExecutionStreams(this.jsm, config.subjectPrefix);
    await this.jsm.consumers.add(this.subjects.commands.stream, {
      durable_name: this.subjects.commands.consumer,
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(120_000),
      max_deliver: 20,
    });
    this.queries.start();
    this.registration = nats.subscribe(this.subjects.agents.register, {
      queue: 'orchestrator',
      callback: (err, msg) => void this.register(err, msg),
    });
    const recovered = await this.recoverRuns();
    if (recovered.length > 0) logger.info({ runs: recovered }, 'continuing runs from the event log');
    this.syncResultFeeds();
    void this.consumeCommands();
    this.timer = setInterval(() => void this.tick(), config.tickMs);
    logger.info({ instance: config.instanceId, prefix: config.subjectPrefix }, 'orchestrator started');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.commandFeed?.close();
    for (const feed of this.resultFeeds.values()) await feed.close();
    this.registration?.unsubscribe();
    this.queries.stop();
    await this.outbox?.stop();
    await this.nodeStatuses?.stop();
    await this.coordinator.releaseAll();
    await this.strategies.releaseAll();
  }

  private async tick(): Promise<void> {
    if (this.ticking || this.stopped) return;
    this.ticking = true;
    try {
      await this.coordinator.tick();
      await this.strategies.tick();
      await this.recoverRuns();
      this.syncResultFeeds();
      await this.keepOutbox();
      // One orchestrator records node presence changes: the one holding the outbox lease.
      if (this.outbox)
        for (const e of await this.presenceWatcher.check()) this.deps.logger.info({ node: e.data.uid }, e.type);
      this.tickFailures.succeeded();
    } catch (err) {
      this.tickFailures.failed(err);
    } finally {
      this.ticking = false;
    }
  }

  /** Takes over the open runs nobody drives; one listing of them serves both coordinators. */
  private async recoverRuns(): Promise<string[]> {
    const open = await this.runLog.openRuns();
    // Strategy runs first: a phase run is driven where its strategy run is.
    const strategies = await this.strategies.recover(open);
    return [...strategies, ...(await this.coordinator.recover(open, (parent) => this.strategies.drives(parent)))];
  }

  /**
   * One publisher of committed events at a time, whoever holds the outbox lease; the same
   * orchestrator keeps config-store's node statuses up to date.
   */
  private async keepOutbox(): Promise<void> {
    const holding = this.outbox ? await this.outboxLease.renew('outbox') : await this.outboxLease.acquire('outbox');
    if (holding && !this.outbox) {
      this.outbox = new NatsOutboxPublisher(this.deps.nats, this.store, {
        subjectPrefix: `${this.deps.config.subjectPrefix}.events`,
        // Watchers see this orchestrator's events within 25 ms, other replicas' within a poll.
        pollIntervalMs: 100,
        minIntervalMs: 25,
        onError: (err: unknown) => this.outboxFailures.failed(err),
        onRecovered: () => this.outboxFailures.succeeded(),
      });
      this.outbox.start();
      this.nodeStatuses?.start();
      this.presenceWatcher.forget();
    } else if (!holding && this.outbox) {
      await this.outbox.stop();
      this.outbox = undefined;
      await this.nodeStatuses?.stop();
    }
  }

  /** Each run this orchestrator drives gets its results from the start of its subject (replays are harmless). */
  private syncResultFeeds(): void {
    const owned = new Set(this.coordinator.owned());
    for (const [runId, feed] of this.resultFeeds) {
      if (!owned.has(runId)) {
        void feed.close();
        this.resultFeeds.delete(runId);
      }
    }
    for (const runId of owned) {
      if (this.resultFeeds.has(runId)) continue;
      const placeholder = {} as ConsumerMessages;
      this.resultFeeds.set(runId, placeholder);
      void this.feedResults(runId, placeholder);
    }
  }

  private async feedResults(runId: string, placeholder: ConsumerMessages): Promise<void> {
    try {
      // An ephemeral consumer with a single filter subject (ordered consumers need
      // filter_subjects, which NATS servers before 2.10 refuse). It starts from the run's first
      // result, so a recovered run sees what came while no orchestrator was there.
      const info = await (this.jsm as JetStreamManager).consumers.add(this.subjects.results.stream, {
        filter_subject: this.subjects.results.forRun(runId),
        deliver_policy: DeliverPolicy.All,
        ack_policy: AckPolicy.Explicit,
        inactive_threshold: nanos(60_000),
      });
      const consumer = await this.js.consumers.get(this.subjects.results.stream, info.name);
      const feed = await consumer.consume();
      if (this.resultFeeds.get(runId) !== placeholder) {
        await feed.close();
        return;
      }
      this.resultFeeds.set(runId, feed);
      // Results that arrive while a batch is being recorded form the next batch (one commit each).
      const pending: JsMsg[] = [];
      const failures = new RepeatedFailureLog(this.deps.logger, {
        failing: 'could not record task results; they will be delivered again',
        recovered: 'task results are recorded again',
        level: 'error',
      });
      let draining: Promise<void> | undefined;
      const drain = async (): Promise<void> => {
        while (pending.length > 0) {
          const batch = pending.splice(0, 500);
          const reports: TaskProgressMessage[] = [];
          const readable: JsMsg[] = [];
          for (const msg of batch) {
            try {
              const report = decodeJson<TaskProgressMessage>(msg);
              // NATS lets an agent publish only on its own node's result subject; a report that
              // names another node than its subject is not taken.
              const from = this.subjects.results.nodeOf(msg.subject);
              if (report.node !== from) {
                this.deps.logger.warn(
                  { runId, node: from, claimedNode: report.node, key: report.key },
                  'dropping a result whose node is not the one its subject names',
                );
                msg.term();
                continue;
              }
              reports.push(report);
              readable.push(msg);
            } catch (err) {
              this.deps.logger.error(
                { runId, err: (err as Error).message },
                'dropping a result that is not valid JSON',
              );
              msg.term();
            }
          }
          try {
            await this.coordinator.progressBatch(reports);
            for (const msg of readable) msg.ack();
            failures.succeeded({ runId });
          } catch (err) {
            // Not recorded: the results come again (the coordinator's state matches the log).
            failures.failed(err, { runId });
            for (const msg of readable) msg.nak(1000);
          }
        }
        draining = undefined;
      };
      for await (const msg of feed) {
        pending.push(msg);
        draining ??= drain();
      }
      await draining;
    } catch (err) {
      this.deps.logger.warn({ runId, err: (err as Error).message }, 'results feed ended; it restarts on the next tick');
      if (this.resultFeeds.get(runId) === placeholder) this.resultFeeds.delete(runId);
    }
  }

  private async consumeCommands(): Promise<void> {
    while (!this.stopped) {
      try {
        const consumer = await this.js.consumers.get(this.subjects.commands.stream, this.subjects.commands.consumer);
        this.commandFeed = await consumer.consume({ max_messages: 1 });
        for await (const msg of this.commandFeed) await this.handleCommand(msg);
      } catch (err) {
        if (this.stopped) return;
        this.deps.logger.warn({ err: (err as Error).message }, 'command feed interrupted; reconnecting');
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  private async handleCommand(msg: JsMsg): Promise<void> {
    let commandId = 'unknown';
    let reply: CommandReply;
    try {
      const envelope = decodeJson<{ type: DeploymentCommandType; payload: Record<string, unknown> }>(msg);
      commandId = typeof envelope.payload?.commandId === 'string' ? envelope.payload.commandId : commandId;
      const Dto = COMMAND_DTOS[envelope.type];
      if (!Dto)
        throw new InvalidCommandError(
          'INVALID_COMMAND',
          `unknown command type ${JSON.stringify(envelope.type)} (expected one of ${Object.keys(COMMAND_DTOS).join(', ')})`,
        );
      const payload = plainToInstance(Dto, envelope.payload);
      const problems = validateSync(payload).flatMap((e) =>
        Object.values(e.constraints ?? {}).map((m) => `${e.property}: ${m}`),
      );
      if (problems.length > 0)
        throw new InvalidCommandError('INVALID_COMMAND', `${envelope.type}: ${problems.join('; ')}`);
      const runId = await this.execute(envelope.type, payload as never, msg);
      if (runId === undefined) return; // handed to another orchestrator
      reply = { accepted: true, runId };
    } catch (err) {
      reply = {
        accepted: false,
        code: err instanceof GranuleError ? err.code : 'INTERNAL',
        message: err instanceof Error ? err.message : String(err),
      };
      this.deps.logger.warn({ commandId, code: reply.code }, reply.message);
    }
    this.deps.nats.publish(this.subjects.commands.replyFor(commandId), JSON.stringify(reply));
    msg.ack();
    this.syncResultFeeds();
  }

  /** Runs a command; returns the run id, or undefined when another orchestrator owns the run (the message goes back). */
  private async execute(
    type: DeploymentCommandType,
    payload: Record<string, never>,
    msg: JsMsg,
  ): Promise<string | undefined> {
    const c = payload as unknown as { runId: string; newRunId?: string };
    switch (type) {
      case 'StartDeployment': {
        const start = payload as unknown as StartDeploymentCommand;
        if (start.strategy) {
          await this.strategies.start(start);
        } else {
          // Answered once the request is recorded: the plan may take a while, and the commands
          // after this one must not wait for it. A refused plan ends the run (DeploymentRefused).
          await this.coordinator.accept(start);
        }
        return c.runId;
      }
      case 'RetryFailed':
        await this.coordinator.retry(payload as unknown as RetryFailedCommand);
        return c.newRunId;
      case 'StopDeployment':
      case 'ResumeDeployment': {
        const owned = this.coordinator.owned().includes(c.runId) || this.strategies.owned().includes(c.runId);
        const open = !owned && (await this.coordinator.isOpen(c.runId));
        if (open) {
          // Another replica drives it: handed back to the work queue until its driver takes it.
          msg.nak(500);
          return undefined;
        }
        const target = (await this.strategies.isStrategyRun(c.runId)) ? this.strategies : this.coordinator;
        if (type === 'StopDeployment') await target.stop(c.runId);
        else await target.resume(c.runId);
        return c.runId;
      }
    }
  }

  private async register(
    err: Error | null,
    msg: { data: Uint8Array; respond(data: string): boolean; subject: string },
  ): Promise<void> {
    if (err) return;
    const answer = (reply: AgentRegistrationReply): void => void msg.respond(JSON.stringify(reply));
    try {
      const agent = decodeJson<AgentRegistration>(msg);
      const expected = this.deps.config.agentToken;
      if (expected && !sameSecret(expected, agent.token ?? '')) {
        answer({ accepted: false, message: 'the agent token does not match GRANULE_AGENT_TOKEN' });
        return;
      }
      await this.store.appendToStream(
        nodeStreamId(agent.uid),
        [
          {
            type: 'NodeRegistered',
            data: {
              uid: agent.uid,
              hostname: agent.hostname,
              address: agent.address,
              agentVersion: agent.agentVersion,
              at: new Date().toISOString(),
            },
          },
        ],
        { expectedVersion: 'any' },
      );
      this.presenceWatcher.registered(agent.uid);
      this.deps.logger.info({ node: agent.uid, hostname: agent.hostname }, 'agent registered');
      answer({
        accepted: true,
        heartbeatSeconds: this.deps.config.heartbeatSeconds,
        presenceTtlSeconds: this.deps.config.presenceTtlSeconds,
      });
    } catch (e) {
      answer({ accepted: false, message: (e as Error).message });
    }
  }
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
