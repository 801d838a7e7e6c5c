import { Inject, Injectable, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import type { AgentProcessSpawner, TaskJournal } from '@granule/task-runners';
import { AGENT_LOGGER, type AgentLogger } from './agent-logger';
import { AgentMessaging } from './agent-messaging.adapter';
import { AgentRegistrationService } from './agent-registration.service';
import { PROCESS_SPAWNER, TASK_JOURNAL } from './agent.tokens';
import { AGENT_CONFIG } from './config/agent-config.provider';
import type { AgentConfig } from './config/agent-config';
import { DispatchHandler } from './dispatch.handler';
import { PresenceHeartbeat } from './presence.heartbeat';

/**
 * Start and stop order of the agent. Start: settle what the last run left, the spawn helper,
 * presence, registration (background; the orchestrator makes the node's dispatch consumer then),
 * then consume once the consumer exists. Stop: stop pulling, cancel the running
 * task and report it, let the spawn helper go, send the last heartbeat (`leaving`), close the journal, drain NATS.
 */
@Injectable()
export class AgentLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private consuming?: Promise<void>;

  constructor(
    private readonly messaging: AgentMessaging,
    private readonly handler: DispatchHandler,
    private readonly heartbeat: PresenceHeartbeat,
    private readonly registration: AgentRegistrationService,
    @Inject(TASK_JOURNAL) private readonly journal: TaskJournal,
    @Inject(PROCESS_SPAWNER) private readonly spawner: AgentProcessSpawner,
    @Inject(AGENT_CONFIG) private readonly config: AgentConfig,
    @Inject(AGENT_LOGGER) private readonly log: AgentLogger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.handler.recover();
    await this.spawner.start();
    this.heartbeat.start();
    this.registration.start();
    // The orchestrator makes this node's dispatch consumer again when the agent registers again.
    this.messaging.onConsumerLost = () => this.registration.restart();
    this.consuming = this.messaging
      .consume((msg) => this.handler.handle(msg))
      .catch((err: Error) => {
        this.log.fatal(
          { err: err.message },
          'the dispatch consumer stopped; exiting so the service manager restarts the agent',
        );
        process.exit(1);
      });
    const s = this.messaging.subjects;
    this.log.info(
      {
        root: this.config.rootDir,
        allowedRoots: this.config.allowedRoots,
        dispatch: s.dispatch.forNode(this.config.nodeUid),
        consumer: `${s.dispatch.stream}/${s.dispatch.consumerFor(this.config.nodeUid)}`,
        heartbeat: s.agents.heartbeatFrom(this.config.nodeUid),
        journalEntries: this.journal.size,
        spawnHelper: this.spawner.helperKind,
      },
      'node-agent started',
    );
  }

  async beforeApplicationShutdown(signal?: string): Promise<void> {
    this.log.info({ signal }, 'node-agent stopping');
    this.registration.stop();
    this.handler.stop();
    await this.messaging.stopConsuming();
    await this.consuming;
    this.spawner.close();
    await this.heartbeat.stop();
    await this.journal.close();
    await this.messaging.drain();
    this.log.info('node-agent stopped');
  }
}
