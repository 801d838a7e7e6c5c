import { networkInterfaces, hostname } from 'node:os';
import type { Provider } from '@nestjs/common';
import { AGENT_ENV_VARS, loadAgentConfig, type AgentConfig, type HostFacts } from './agent-config';

/** Injection token of the `AgentConfig`. */
export const AGENT_CONFIG = Symbol('AGENT_CONFIG');

/**
 * Reads the agent's configuration from the process environment: the one place that does.
 * The agent token is then removed from the environment so task commands do not inherit it.
 * Throws `AgentConfigError` listing every problem.
 */
export function readAgentConfig(): AgentConfig {
  const env: Record<string, string | undefined> = {};
  for (const name of AGENT_ENV_VARS) env[name] = process.env[name];
  const config = loadAgentConfig(env, hostFacts());
  delete process.env.GRANULE_AGENT_TOKEN;
  return config;
}

/** The provider of an already read configuration. */
export function agentConfigProvider(config: AgentConfig): Provider {
  return { provide: AGENT_CONFIG, useValue: Object.freeze({ ...config }) };
}

function hostFacts(): HostFacts {
  const addresses = Object.values(networkInterfaces()).flatMap((list) => list ?? []);
  const ipv4 = addresses.find((a) => a.family === 'IPv4' && !a.internal);
  return { hostname: hostname(), address: ipv4?.address };
}
