import { Module, type DynamicModule } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import { Registry } from 'prom-client';
import { connectNats } from '@granule/messaging';
import { registerAgentMetrics, type AgentMetrics } from '@granule/observability';
import { nestLoggerParams } from '@granule/service-kit/logging';
import { AgentProcessSpawner, TaskJournal, TaskRunner } from '@granule/task-runners';
import { AGENT_LOGGER, type AgentLogger } from './agent-logger';
import { AgentMessaging } from './agent-messaging.adapter';
import { AgentRegistrationService } from './agent-registration.service';
import { AgentStateStore } from './agent-state.store';
import { AgentLifecycle } from './agent.lifecycle';
import {
  AGENT_METRICS,
  AGENT_STATE,
  NATS_CONNECTION,
  PROCESS_SPAWNER,
  TASK_JOURNAL,
  TASK_RUNNER,
} from './agent.tokens';
import { AGENT_CONFIG, agentConfigProvider } from './config/agent-config.provider';
import type { AgentConfig } from './config/agent-config';
import { DispatchHandler } from './dispatch.handler';
import { PackageFiles } from './package-files';
import { PresenceHeartbeat } from './presence.heartbeat';

/** The node-agent: adapters (NATS, journal, state file, runners) and the services using them; NATS is its only connection. */
@Module({})
export class AgentModule {
  /**
   * `onNatsLost`: NATS closed the connection for good (the node's credential refused at a
   * reconnection). `metrics`: the figures `/metrics` serves (default: counted, not served).
   */
  static forRoot(
    config: AgentConfig,
    logger: AgentLogger,
    onNatsLost?: (message: string) => void,
    metrics: AgentMetrics = registerAgentMetrics(new Registry()),
  ): DynamicModule {
    return {
      module: AgentModule,
      // Nest's own lines through the agent's logger, warnings and errors only.
      imports: [LoggerModule.forRoot(nestLoggerParams(logger, { nestLevel: 'warn' }))],
      providers: [
        agentConfigProvider(config),
        { provide: AGENT_LOGGER, useValue: logger },
        { provide: AGENT_METRICS, useValue: metrics },
        {
          provide: NATS_CONNECTION,
          useFactory: (c: AgentConfig) =>
            connectNats(c, `granule-node-agent:${c.nodeUid}`, onNatsLost ? { onLost: onNatsLost } : {}),
          inject: [AGENT_CONFIG],
        },
        { provide: TASK_JOURNAL, useFactory: (c: AgentConfig) => TaskJournal.open(c.stateDir), inject: [AGENT_CONFIG] },
        {
          provide: AGENT_STATE,
          useFactory: async (c: AgentConfig, log: AgentLogger) => {
            const { store, setAside } = await AgentStateStore.open(c.stateDir);
            if (setAside)
              log.warn({ file: setAside }, 'the agent state file was unreadable; moved aside, starting without it');
            return store;
          },
          inject: [AGENT_CONFIG, AGENT_LOGGER],
        },
        // Task processes are started by the native helper where it is built: forking the agent costs more.
        {
          provide: PROCESS_SPAWNER,
          useFactory: (c: AgentConfig) => new AgentProcessSpawner({ helper: c.spawnHelper }),
          inject: [AGENT_CONFIG],
        },
        {
          provide: TASK_RUNNER,
          useFactory: (c: AgentConfig, spawner: AgentProcessSpawner) =>
            new TaskRunner({
              rootDir: c.rootDir,
              allowedRoots: c.allowedRoots,
              rebootCommand: c.rebootCommand,
              stateDir: c.stateDir,
              spawner,
            }),
          inject: [AGENT_CONFIG, PROCESS_SPAWNER],
        },
        AgentMessaging,
        PackageFiles,
        PresenceHeartbeat,
        AgentRegistrationService,
        DispatchHandler,
        AgentLifecycle,
      ],
    };
  }
}
