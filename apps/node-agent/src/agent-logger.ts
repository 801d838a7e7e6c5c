import { createLogger, type LogFormat, type Logger } from '@granule/service-kit';
import type { AgentConfig } from './config/agent-config';

/** Injection token of the agent's logger. */
export const AGENT_LOGGER = Symbol('AGENT_LOGGER');

export type AgentLogger = Logger;

/**
 * The service-kit logger with `node` on every line; task lines add `runId`, `task` and `key`
 * (task@node) through child loggers. `format`: GRANULE_LOG_FORMAT (json off a terminal).
 *
 * Lines are written synchronously, as Node.js writes stdout to files, pipes and sockets on
 * Linux: a line is out before the call returns, so the last lines before a crash are not lost,
 * and no line costs a hand-off to the thread pool (pino's asynchronous default did, twice per
 * task). A journald that stops reading stalls the agent instead of growing its memory.
 */
export function createAgentLogger(
  config: Pick<AgentConfig, 'nodeUid' | 'logLevel'>,
  format: LogFormat = 'json',
): AgentLogger {
  return createLogger('node-agent', { level: config.logLevel, format, bindings: { node: config.nodeUid }, sync: true });
}
