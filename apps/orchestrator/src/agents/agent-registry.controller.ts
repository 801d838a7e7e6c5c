import { timingSafeEqual } from 'node:crypto';
import { Controller, Inject } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { ensureAgentConsumer } from '@granule/messaging';
import type { Caller } from '@granule/messaging';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Allow, CallerOf } from '@granule/nats-endpoints';
import { GranuleError, InvalidInputError } from '@granule/core';
import { ID_PATTERN, nodeStreamId } from '@granule/contracts';
import type { AgentRegistered, AgentRegistration, DispatchRefusedAlert } from '@granule/contracts';
import { EventStore } from '@granule/event-store';
import type { Logger } from '@granule/service-kit';
import { OrchestratorConfig } from '../orchestrator.config';
import { LOGGER, NATS } from '../orchestrator.tokens';
import { NodePresenceWatcher } from '../outbox/node-presence.watcher';

class RegistrationRefusedError extends GranuleError<'AGENT_REFUSED'> {}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * `<prefix>.agent.register`: an agent says it is up. Its dispatch consumer is made (agents create
 * nothing on JetStream), the registration is recorded as `NodeRegistered` on the node's stream,
 * and the answer tells it how often to beat and the presence TTL watched.
 */
@Controller()
export class AgentRegistryController {
  constructor(
    @Inject(NATS) private readonly nats: NatsConnection,
    @Inject(OrchestratorConfig) private readonly config: OrchestratorConfig,
    @Inject(EventStore) private readonly store: EventStore,
    @Inject(NodePresenceWatcher) private readonly presence: NodePresenceWatcher,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  @MessagePattern('agent.register')
  @Allow('agent')
  async register(@Payload() agent: AgentRegistration, @CallerOf() caller: Caller): Promise<AgentRegistered> {
    if (typeof agent.uid !== 'string' || !ID_PATTERN.test(agent.uid))
      throw new InvalidInputError([
        {
          severity: 'error',
          code: 'INVALID_INPUT',
          path: 'uid',
          message: `expected a node uid, got ${JSON.stringify(agent.uid)}`,
        },
      ]);
    // An agent's credential is bound to one node: it registers that node and no other.
    if (caller.authenticated && caller.node !== agent.uid)
      throw new RegistrationRefusedError(
        'AGENT_REFUSED',
        `'${caller.name}' is enrolled for node ${caller.node ?? '(none)'}, not ${agent.uid}`,
      );
    const expected = this.config.agentToken;
    if (expected && !sameSecret(expected, agent.token ?? ''))
      throw new RegistrationRefusedError('AGENT_REFUSED', 'the agent token does not match GRANULE_AGENT_TOKEN');
    // The agent may read its dispatches but create nothing on JetStream: its consumer is made here.
    await ensureAgentConsumer(await jetstreamManager(this.nats), this.config.subjectPrefix, agent.uid);
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
    this.presence.registered(agent.uid);
    this.logger.info({ node: agent.uid, hostname: agent.hostname }, 'agent registered');
    return { heartbeatSeconds: this.config.heartbeatSeconds, presenceTtlSeconds: this.config.presenceTtlSeconds };
  }
}

/**
 * `<prefix>.alert.<node>`: an agent refused a dispatch the orchestrator did not issue. Recorded
 * as `DispatchRefused` on the node's stream, so the event log shows the attempt.
 */
@Controller()
export class AgentAlertsController {
  constructor(
    @Inject(EventStore) private readonly store: EventStore,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  @MessagePattern('alert.*')
  @Allow('agent')
  async refused(@Payload() alert: DispatchRefusedAlert, @CallerOf() caller: Caller): Promise<void> {
    // NATS lets an agent publish only on its own node's alert subject; its credential names the node.
    const uid = caller.node ?? (typeof alert.node === 'string' && ID_PATTERN.test(alert.node) ? alert.node : undefined);
    if (uid === undefined) return;
    const data = {
      uid,
      ...(typeof alert.runId === 'string' ? { runId: alert.runId.slice(0, 200) } : {}),
      ...(typeof alert.dispatchId === 'string' ? { dispatchId: alert.dispatchId.slice(0, 300) } : {}),
      reason: String(alert.reason ?? '').slice(0, 500),
      at: new Date().toISOString(),
    };
    this.logger.warn(data, 'an agent refused a dispatch the orchestrator did not issue');
    await this.store.appendToStream(nodeStreamId(uid), [{ type: 'DispatchRefused', data }], { expectedVersion: 'any' });
  }
}
