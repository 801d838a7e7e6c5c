import { randomBytes } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { GranuleError } from '@granule/core';
import { executionSubjects } from '@granule/contracts';
import type { CommandReply, DeploymentCommand, ExecutionSubjects, QueryReply } from '@granule/contracts';
import { connectNats } from '@granule/messaging';
import { cliConfigPath, readCliConfigFile, resolveConnection } from './cli-connection';

export class ServiceError extends GranuleError<string> {}

/** A NATS connection to the installation the flags, environment or config file name. */
export interface NatsSession {
  nc: NatsConnection;
  prefix: string;
  subjects: ExecutionSubjects;
  url: string;
}

export async function withNats<T>(
  flags: { natsUrl?: string; subjectPrefix?: string },
  fn: (session: NatsSession) => Promise<T>,
): Promise<T> {
  const settings = resolveConnection(flags, process.env, await readCliConfigFile(cliConfigPath(process.env)));
  const nc = await connectNats(settings.natsUrl, 'granule-cli');
  try {
    return await fn({
      nc,
      prefix: settings.subjectPrefix,
      subjects: executionSubjects(settings.subjectPrefix),
      url: settings.natsUrl,
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

export function newCommandId(): string {
  return randomBytes(8).toString('hex');
}

const COMMAND_SUBJECT = {
  StartDeployment: 'startDeployment',
  StopDeployment: 'stopDeployment',
  ResumeDeployment: 'resumeDeployment',
  RetryFailed: 'retryFailed',
} as const;

/**
 * Sends a command on the durable command stream and waits for the orchestrator's answer.
 * The command survives an orchestrator restart; the wait does not need to.
 */
export async function sendCommand(
  session: NatsSession,
  command: DeploymentCommand,
  timeoutMs = 120_000,
): Promise<string> {
  const { nc, subjects } = session;
  const replies = nc.subscribe(subjects.commands.replyFor(command.payload.commandId), { max: 1, timeout: timeoutMs });
  const js = jetstream(nc);
  try {
    await js.publish(subjects.commands[COMMAND_SUBJECT[command.type]], JSON.stringify(command), {
      msgID: command.payload.commandId,
      timeout: 5000,
    });
  } catch (err) {
    replies.unsubscribe();
    throw new ServiceError(
      'COMMAND_NOT_STORED',
      `the command stream does not take commands at ${session.url} (${(err as Error).message}): start the orchestrator once so it creates its streams (npm run start:orchestrator)`,
    );
  }
  try {
    for await (const msg of replies) {
      const reply = JSON.parse(msg.string()) as CommandReply;
      if (!reply.accepted) throw new ServiceError(reply.code, reply.message);
      return reply.runId;
    }
  } catch (err) {
    if (err instanceof ServiceError) throw err;
    throw new ServiceError(
      'ORCHESTRATOR_SILENT',
      `no orchestrator answered within ${timeoutMs / 1000} s (the command is kept and runs when one starts): start it with npm run start:orchestrator`,
    );
  }
  throw new ServiceError('ORCHESTRATOR_SILENT', 'no orchestrator answered: start it with npm run start:orchestrator');
}

/** Asks the orchestrators a question (request/reply). */
export async function query<Q, R>(session: NatsSession, subject: string, request: Q, timeoutMs = 15_000): Promise<R> {
  let raw: string;
  try {
    raw = (await session.nc.request(subject, JSON.stringify(request), { timeout: timeoutMs })).string();
  } catch {
    throw new ServiceError(
      'ORCHESTRATOR_SILENT',
      `no orchestrator answered on ${subject}: start it with npm run start:orchestrator`,
    );
  }
  const reply = JSON.parse(raw) as QueryReply<R>;
  if (!reply.ok) throw new ServiceError(reply.code, reply.message);
  return reply.result;
}
