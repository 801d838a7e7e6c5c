import { Inject, Injectable } from '@nestjs/common';
import { ServiceUnavailableError } from '@granule/messaging';
import type { AgentRegistration } from '@granule/contracts';
import { AGENT_LOGGER, type AgentLogger } from './agent-logger';
import { AgentMessaging } from './agent-messaging.adapter';
import { AGENT_VERSION } from './agent-version';
import { AGENT_CONFIG } from './config/agent-config.provider';
import type { AgentConfig } from './config/agent-config';
import { PresenceHeartbeat } from './presence.heartbeat';

/** Seconds between registration attempts while no orchestrator accepts the agent. */
export const REGISTER_RETRY_SECONDS = 5;

/**
 * Registers the agent with an orchestrator (`<p>.agent.register`, request/reply) in the
 * background, retrying until one accepts it (an ok reply whose result, `AgentRegistered`, sets the
 * heartbeat timing). Tasks are served meanwhile: the dispatch consumer does not depend on it.
 */
@Injectable()
export class AgentRegistrationService {
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private attempts = 0;

  constructor(
    private readonly messaging: AgentMessaging,
    private readonly heartbeat: PresenceHeartbeat,
    @Inject(AGENT_CONFIG) private readonly config: AgentConfig,
    @Inject(AGENT_LOGGER) private readonly log: AgentLogger,
  ) {}

  /** Starts registering; resolves at once. */
  start(): void {
    void this.attempt();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** Registers again now (the dispatch consumer was lost: registering has it made again). */
  restart(): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.attempts = 0;
    void this.attempt();
  }

  private async attempt(): Promise<void> {
    if (this.stopped) return;
    this.attempts++;
    const registration: AgentRegistration = {
      uid: this.config.nodeUid,
      hostname: this.config.hostname,
      address: this.config.address,
      agentVersion: AGENT_VERSION,
      ...(this.config.agentToken !== undefined ? { token: this.config.agentToken } : {}),
    };
    try {
      const reply = await this.messaging.register(registration);
      this.log.info({ attempts: this.attempts }, 'registered with the orchestrator');
      this.heartbeat.retime(reply.heartbeatSeconds, reply.presenceTtlSeconds);
      return;
    } catch (err) {
      if (this.stopped) return;
      if (!(err instanceof ServiceUnavailableError)) {
        this.log.warn(
          { reason: (err as Error).message },
          `the orchestrator refused the registration; retrying every ${REGISTER_RETRY_SECONDS} s`,
        );
        if (!this.stopped) this.timer = setTimeout(() => void this.attempt(), REGISTER_RETRY_SECONDS * 1000);
        return;
      }
      const message = `no orchestrator answered on ${this.messaging.subjects.agents.register}; retrying every ${REGISTER_RETRY_SECONDS} s; tasks are served meanwhile`;
      if (this.attempts === 1) this.log.info({ err: (err as Error).message }, message);
      else this.log.debug({ err: (err as Error).message, attempts: this.attempts }, message);
    }
    if (!this.stopped) this.timer = setTimeout(() => void this.attempt(), REGISTER_RETRY_SECONDS * 1000);
  }
}
