import { Inject, Injectable } from '@nestjs/common';
import type { OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { AckPolicy } from '@nats-io/jetstream';
import type { JsMsg } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { GranuleError } from '@granule/core';
import { commandStreamId, DEFAULT_COMMAND_TTL_SECONDS, executionSubjects, ID_PATTERN } from '@granule/contracts';
import type {
  CommandExpiry,
  CommandReply,
  DeploymentCommandType,
  ExecutionSubjects,
  ResumeDeployment,
  RetryFailed,
  StartDeployment,
} from '@granule/contracts';
import {
  DeploymentCommandEnvelope,
  RetryFailedCommand,
  ResumeDeploymentCommand,
  StartDeploymentCommand,
  StopDeploymentCommand,
} from '@granule/contracts/dto';
import { EventStore } from '@granule/event-store';
import { CallerVerifier, decodeJson, errorReply, JetStreamConsumers, okReply } from '@granule/messaging';
import type { Caller, ConsumerRun, Settle } from '@granule/messaging';
import { RunCoordinator, StrategyCoordinator } from '@granule/run-coordination';
import { outcomeOfCode, type OrchestratorMetrics } from '@granule/observability';
import type { Logger } from '@granule/service-kit';
import { OrchestratorConfig } from '../orchestrator.config';
import { LOGGER, METRICS, NATS } from '../orchestrator.tokens';
import { ResultIntake } from '../results/result-intake';

const COMMAND_DTOS: Record<DeploymentCommandType, new () => object> = {
  StartDeployment: StartDeploymentCommand,
  StopDeployment: StopDeploymentCommand,
  ResumeDeployment: ResumeDeploymentCommand,
  RetryFailed: RetryFailedCommand,
};

class InvalidCommandError extends GranuleError<'INVALID_COMMAND'> {}

function problemsOf(value: object): string[] {
  return validateSync(value).flatMap((e) => Object.values(e.constraints ?? {}).map((m) => `${e.property}: ${m}`));
}

/** A command that was decoded and checked, with who sent it and until when it may be acted on. */
interface TakenCommand {
  type: DeploymentCommandType;
  payload: Record<string, unknown> & { commandId: string; runId: string };
  caller: Caller;
  storedAt: Date;
  ttlSeconds: number;
}

/**
 * Takes operator commands from the JetStream command stream (durable work-queue consumer the
 * orchestrators share, through `JetStreamConsumers`), one at a time: checks the envelope and payload, the sender's signature
 * and role, and the command's time to live, then hands it to the run or strategy coordinator
 * and answers on `<prefix>.reply.cmd.<commandId>` with the reply envelope.
 *
 * A command found after its time to live (no orchestrator ran while its sender waited) is never
 * run: it is recorded as expired (`DeploymentExpired` on the run it would have started,
 * `CommandExpired` for a stop or resume) so `runs list` and the event log show it.
 */
@Injectable()
export class CommandIntake implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly subjects: ExecutionSubjects;
  private feed?: ConsumerRun;
  private readonly callers: CallerVerifier;

  constructor(
    @Inject(NATS) private readonly nats: NatsConnection,
    @Inject(OrchestratorConfig) private readonly config: OrchestratorConfig,
    @Inject(RunCoordinator) private readonly runs: RunCoordinator,
    @Inject(StrategyCoordinator) private readonly strategies: StrategyCoordinator,
    @Inject(EventStore) private readonly store: EventStore,
    @Inject(ResultIntake) private readonly results: ResultIntake,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(METRICS) private readonly metrics: Pick<OrchestratorMetrics, 'commands'>,
    @Inject(JetStreamConsumers) private readonly consumers: JetStreamConsumers,
  ) {
    this.subjects = executionSubjects(config.subjectPrefix);
    this.callers = new CallerVerifier(nats);
  }

  async onApplicationBootstrap(): Promise<void> {
    this.feed = await this.consumers.start({
      what: 'command feed',
      stream: this.subjects.commands.stream,
      config: {
        durable_name: this.subjects.commands.consumer,
        ack_policy: AckPolicy.Explicit,
        ack_wait: nanos(120_000),
        max_deliver: 20,
      },
      // One command at a time, in the order they were sent.
      maxMessages: 1,
      handle: (msg) => this.handle(msg),
    });
  }

  async onModuleDestroy(): Promise<void> {
    await this.feed?.stop();
  }

  private async handle(msg: JsMsg): Promise<Settle> {
    // The reply goes where the sender waits, also for a command refused before its payload is
    // checked (a bad signature, a role that may not): the id is read from the raw message.
    let commandId = claimedCommandId(msg);
    let commandType = 'unknown';
    let reply: CommandReply;
    try {
      const command = this.take(msg);
      commandId = command.payload.commandId;
      commandType = command.type;
      const expiresAt = command.storedAt.getTime() + command.ttlSeconds * 1000;
      if (Date.now() > expiresAt) {
        await this.expire(command);
        this.metrics.commands.inc({ command: commandType, outcome: 'expired' });
        reply = errorReply(
          new GranuleError(
            'COMMAND_EXPIRED',
            `the ${command.type} command waited more than ${command.ttlSeconds} s for an orchestrator; it was not run`,
          ),
        );
      } else {
        const runId = await this.execute(command);
        // Another replica drives the run: back to the work queue until its driver takes it.
        if (runId === undefined) return { nak: 500 };
        reply = okReply({ runId });
        this.metrics.commands.inc({ command: commandType, outcome: 'accepted' });
      }
    } catch (err) {
      reply = errorReply(err);
      this.metrics.commands.inc({
        command: commandType,
        outcome: outcomeOfCode(reply.ok ? undefined : reply.error.code),
      });
      if (!reply.ok) this.logger.warn({ commandId, code: reply.error.code }, reply.error.message);
    }
    if (commandId !== undefined) this.nats.publish(this.subjects.commands.replyFor(commandId), JSON.stringify(reply));
    // A run started here gets its results feed now, not at the next tick.
    this.results.sync();
    return 'ack';
  }

  /** Decodes and checks a command: envelope, payload, signature and role. */
  private take(msg: JsMsg): TakenCommand {
    const raw = decodeJson<Record<string, unknown>>(msg);
    const envelope = plainToInstance(DeploymentCommandEnvelope, raw);
    const envelopeProblems = problemsOf(envelope);
    if (envelopeProblems.length > 0)
      throw new InvalidCommandError('INVALID_COMMAND', `command envelope: ${envelopeProblems.join('; ')}`);
    const payload = plainToInstance(COMMAND_DTOS[envelope.type], envelope.payload);
    const problems = problemsOf(payload);
    if (problems.length > 0)
      throw new InvalidCommandError('INVALID_COMMAND', `${envelope.type}: ${problems.join('; ')}`);
    const caller = this.callers.of(msg.subject, msg.data, msg.headers, ['operator', 'admin'], envelope.type);
    return {
      type: envelope.type,
      payload: payload as TakenCommand['payload'],
      caller,
      storedAt: new Date(Math.floor(msg.info.timestampNanos / 1e6)),
      ttlSeconds: envelope.ttlSeconds ?? DEFAULT_COMMAND_TTL_SECONDS,
    };
  }

  /** Runs a command; returns the run id, or undefined when another orchestrator drives the run (the message goes back). */
  private async execute(command: TakenCommand): Promise<string | undefined> {
    const { payload, caller } = command;
    const metadata = {
      causedBy: caller.name,
      ...(caller.role ? { role: caller.role } : {}),
      commandId: payload.commandId,
    };
    switch (command.type) {
      case 'StartDeployment': {
        const start = payload as unknown as StartDeployment;
        // Answered once the request is recorded: the plan may take a while, and the commands
        // after this one must not wait for it. A refused plan ends the run (DeploymentRefused).
        const { strategy } = start;
        if (strategy) await this.strategies.start({ ...start, strategy }, { requestedBy: caller.name }, metadata);
        else await this.runs.accept(start, { requestedBy: caller.name }, metadata);
        return start.runId;
      }
      case 'RetryFailed': {
        const retry = payload as unknown as RetryFailed;
        await this.runs.retry(retry, caller.name, metadata);
        return retry.newRunId;
      }
      case 'StopDeployment':
      case 'ResumeDeployment': {
        const runId = payload.runId;
        const here = this.runs.drives(runId) || this.strategies.drives(runId);
        if (!here && (await this.runs.isOpen(runId))) return undefined;
        const target = (await this.strategies.isStrategyRun(runId)) ? this.strategies : this.runs;
        // Who asked is the authenticated caller, never a field of the command (ADR 0025).
        if (command.type === 'StopDeployment') await target.stop(runId, metadata, caller.name);
        else if (target === this.runs)
          await this.runs.resume(runId, metadata, (payload as ResumeDeployment).waitForLocks ?? false, caller.name);
        else await this.strategies.resume(runId, metadata, caller.name);
        return runId;
      }
    }
  }

  /** Records a command found after its time to live; nothing of it runs. */
  private async expire(command: TakenCommand): Promise<void> {
    const { type, payload, caller } = command;
    const expiry: CommandExpiry = {
      commandId: payload.commandId,
      command: type,
      storedAt: command.storedAt.toISOString(),
      ttlSeconds: command.ttlSeconds,
      expiredAt: new Date().toISOString(),
    };
    this.logger.warn({ ...expiry, runId: payload.runId, causedBy: caller.name }, 'dropped an expired command');
    const metadata = { causedBy: caller.name, commandId: payload.commandId };
    if (type === 'StartDeployment') {
      await this.runs.expire(payload as unknown as StartDeployment, expiry, { requestedBy: caller.name }, metadata);
      return;
    }
    if (type === 'RetryFailed') {
      const retry = payload as unknown as RetryFailed;
      await this.runs.expire(
        { commandId: retry.commandId, runId: retry.newRunId, graph: 'default', dryRun: false, noop: false },
        expiry,
        { requestedBy: caller.name, retryOf: { runId: retry.runId, failedOnly: retry.failedOnly } },
        metadata,
      );
      return;
    }
    await this.store
      .appendToStream(
        commandStreamId(payload.commandId),
        [{ type: 'CommandExpired', data: { ...expiry, runId: payload.runId, requestedBy: caller.name } }],
        { expectedVersion: 'no_stream' },
        metadata,
      )
      .catch((err: Error) => {
        // A redelivered expired command was recorded the first time.
        if (!/exist|expected/i.test(err.message)) throw err;
      });
  }
}

/** The command id a raw command message names, when it is one a sender can wait on. */
function claimedCommandId(msg: JsMsg): string | undefined {
  try {
    const id = (JSON.parse(new TextDecoder().decode(msg.data)) as { payload?: { commandId?: unknown } })?.payload
      ?.commandId;
    return typeof id === 'string' && ID_PATTERN.test(id) ? id : undefined;
  } catch {
    return undefined;
  }
}
