import pino from 'pino';
import type { AgentConfig } from './config/agent-config';

/** Injection token of the agent's logger. */
export const AGENT_LOGGER = Symbol('AGENT_LOGGER');

export type AgentLogger = pino.Logger;

/**
 * JSON-lines logger on stdout: ISO `time`, `level` as a name, `node` on every line; task lines
 * add `runId` and `key` (task@node) through child loggers.
 *
 * Lines are written synchronously, as Node.js writes stdout to files, pipes and sockets on
 * Linux: a line is out before the call returns, so the last lines before a crash are not lost,
 * and no line costs a hand-off to the thread pool (pino's asynchronous default did, twice per
 * task). A journald that stops reading stalls the agent instead of growing its memory.
 */
export function createAgentLogger(config: Pick<AgentConfig, 'nodeUid' | 'logLevel'>): AgentLogger {
  return pino(
    {
      level: config.logLevel,
      base: { service: 'node-agent', node: config.nodeUid, pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    pino.destination({ dest: 1, sync: true }),
  );
}
