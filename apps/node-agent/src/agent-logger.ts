import pino from 'pino';
import type { AgentConfig } from './config/agent-config';

/** Injection token of the agent's logger. */
export const AGENT_LOGGER = Symbol('AGENT_LOGGER');

export type AgentLogger = pino.Logger;

/**
 * JSON-lines logger on stdout: ISO `time`, `level` as a name, `node` on every line; task lines
 * add `runId` and `key` (task@node) through child loggers.
 */
export function createAgentLogger(config: Pick<AgentConfig, 'nodeUid' | 'logLevel'>): AgentLogger {
  return pino({
    level: config.logLevel,
    base: { service: 'node-agent', node: config.nodeUid, pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  });
}
