// Injection tokens of the agent's non-class dependencies (adapters created by factories).
export const NATS_CONNECTION = Symbol('NATS_CONNECTION');
export const TASK_JOURNAL = Symbol('TASK_JOURNAL');
export const AGENT_STATE = Symbol('AGENT_STATE');
export const TASK_RUNNER = Symbol('TASK_RUNNER');
export const PROCESS_SPAWNER = Symbol('PROCESS_SPAWNER');
/** The agent's figures on /metrics (`AgentMetrics`: tasks, task duration, artifact fetches). */
export const AGENT_METRICS = Symbol('AGENT_METRICS');
