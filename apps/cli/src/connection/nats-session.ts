import { randomBytes } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import type { Command } from 'commander';
import { GranuleError, identifierProblem, UsageError } from '@granule/core';
import { DEFAULT_COMMAND_TTL_SECONDS, MAX_COMMAND_TTL_SECONDS, executionSubjects } from '@granule/contracts';
import type { DeploymentCommand, ExecutionSubjects, Reply, StartDeployment } from '@granule/contracts';
import {
  connectNats,
  permissionRefused,
  permissionViolationIn,
  request,
  SERVICES,
  signatureHeaders,
  StoredInputs,
  unwrapReply,
} from '@granule/messaging';
import { redactUrl } from '@granule/service-kit/config';
import { connectionSettings } from './cli-connection';
import type { ConnectionFlags } from './cli-connection';

export class ServiceError extends GranuleError<string> {}

/** A NATS connection to the installation the flags, environment or config file name. */
export interface NatsSession {
  nc: NatsConnection;
  prefix: string;
  subjects: ExecutionSubjects;
  url: string;
}

export async function withNats<T>(flags: ConnectionFlags, fn: (session: NatsSession) => Promise<T>): Promise<T> {
  const settings = await connectionSettings(flags);
  const nc = await connectNats(settings, 'granule-cli');
  try {
    return await fn({
      nc,
      prefix: settings.subjectPrefix,
      subjects: executionSubjects(settings.subjectPrefix),
      url: redactUrl(settings.natsUrl),
    });
  } finally {
    await nc.close();
  }
}

/** `YYYYMMDD-HHMMSS-xxxx`: sortable and short enough to type. */
export function newRunId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${stamp}-${randomBytes(2).toString('hex')}`;
}

/** Refuses a `--run-id` that breaks the run id rule, naming the flag, before anything is sent. */
export function checkRunIdOption(value: string | undefined): void {
  const problem = value === undefined ? undefined : identifierProblem('runId', value);
  if (problem) throw new UsageError(`--run-id: ${problem}`);
}

export function newCommandId(): string {
  return randomBytes(8).toString('hex');
}

const COMMAND_SUBJECT = {
  StartDeployment: 'startDeployment',
  StopDeployment: 'stopDeployment',
  ResumeDeployment: 'resumeDeployment',
  RetryFailed: 'retryFailed',
} as const;

/** What a command does, for the sentence that says it did not happen. */
const NOTHING_DONE: Record<DeploymentCommand['type'], string> = {
  StartDeployment: 'nothing was started',
  RetryFailed: 'nothing was retried',
  StopDeployment: 'nothing was stopped',
  ResumeDeployment: 'nothing was resumed',
};

/** Room a command leaves in a message for its headers (the signature and the identity that signed it). */
const HEADERS_ROOM = 8 * 1024;

/**
 * A StartDeployment whose inline inputs would make the command larger than this NATS takes in
 * one message (max_payload) has them stored first, in the inputs object store, and names them
 * by their SHA-256 instead (ADR 0029); one that fits is sent as it is.
 */
export async function storeLargeInputs(
  session: NatsSession,
  command: StartDeployment,
  ttlSeconds = DEFAULT_COMMAND_TTL_SECONDS,
): Promise<StartDeployment> {
  if (!command.inline) return command;
  const maxPayload = session.nc.info?.max_payload ?? 1024 * 1024;
  const size = new TextEncoder().encode(
    JSON.stringify({ type: 'StartDeployment', payload: command, ttlSeconds }),
  ).length;
  if (size + HEADERS_ROOM <= maxPayload) return command;
  const { inline, ...rest } = command;
  return { ...rest, inputs: await new StoredInputs(session.nc, session.prefix).put(inline) };
}

/** After a command's time to live, how much longer the answer of an orchestrator that took it just in time may take. */
const ANSWER_GRACE_MS = 10_000;

/**
 * Sends a command on the durable command stream and waits for the orchestrator's answer.
 * The command lives `ttlSeconds` from the moment the stream stores it: an orchestrator that
 * finds it later drops it and records it as expired, so a command nobody answered never runs
 * later. The wait lasts a little longer than that, so an answer given in time is seen.
 */
export async function sendCommand(
  session: NatsSession,
  command: DeploymentCommand,
  ttlSeconds = DEFAULT_COMMAND_TTL_SECONDS,
): Promise<string> {
  const { nc, subjects } = session;
  const waitMs = ttlSeconds * 1000 + ANSWER_GRACE_MS;
  const replies = nc.subscribe(subjects.commands.replyFor(command.payload.commandId), { max: 1, timeout: waitMs });
  const js = jetstream(nc);
  const subject = subjects.commands[COMMAND_SUBJECT[command.type]];
  const data = new TextEncoder().encode(JSON.stringify({ ...command, ttlSeconds }));
  try {
    const headers = signatureHeaders(nc, subject, data);
    await js.publish(subject, data, {
      msgID: command.payload.commandId,
      timeout: 5000,
      ...(headers ? { headers } : {}),
    });
  } catch (err) {
    replies.unsubscribe();
    const violation = permissionViolationIn(err);
    if (violation) throw permissionRefused(nc, violation.operation, violation.subject, err);
    const why = (err as Error).message;
    if (/maximum payload|max_payload|message size/i.test(why))
      throw new ServiceError(
        'COMMAND_TOO_LARGE',
        `the ${command.type} command is larger than this NATS takes in one message (${why}): deploy an environment from config-store (--env) instead of inline inputs, or raise max_payload`,
      );
    if (/no responders|stream not found|503/i.test(why))
      throw new ServiceError(
        'COMMAND_NOT_STORED',
        `the command stream does not take commands at ${session.url} (${why}): start the orchestrator once so it creates its streams (npm run start:orchestrator)`,
      );
    throw new ServiceError('COMMAND_NOT_STORED', `the command could not be stored at ${session.url}: ${why}`);
  }
  try {
    for await (const msg of replies) {
      return unwrapReply(JSON.parse(msg.string()) as Reply<{ runId: string }>).runId;
    }
  } catch (err) {
    if (err instanceof GranuleError) throw err;
  }
  throw new ServiceError(
    'ORCHESTRATOR_UNAVAILABLE',
    `no orchestrator answered within ${Math.round(waitMs / 1000)} s: ${NOTHING_DONE[command.type]} (the command expired and will never run); start an orchestrator (npm run start:orchestrator) and run the command again`,
  );
}

/** Asks the orchestrators a question (request/reply). */
export function query<Q, R>(session: NatsSession, subject: string, payload: Q, timeoutMs = 15_000): Promise<R> {
  return request<R>(session.nc, SERVICES.orchestrator, subject, payload, { timeoutMs });
}

/** `--command-ttl SECONDS` of the commands that go through the command stream. */
export function addCommandTtlOption(cmd: Command): Command {
  return cmd.option(
    '--command-ttl <SECONDS>',
    `how long an orchestrator has to take the command; after that it expires and never runs (default ${DEFAULT_COMMAND_TTL_SECONDS})`,
  );
}

/** The command's time to live from `--command-ttl`: whole seconds from 1 to a day. */
export function commandTtl(value: string | undefined): number {
  if (value === undefined) return DEFAULT_COMMAND_TTL_SECONDS;
  const n = /^\d+$/.test(value.trim()) ? Number(value.trim()) : NaN;
  if (!(n >= 1 && n <= MAX_COMMAND_TTL_SECONDS))
    throw new UsageError(
      `--command-ttl: expected whole seconds from 1 to ${MAX_COMMAND_TTL_SECONDS}, got ${JSON.stringify(value)}`,
    );
  return n;
}
