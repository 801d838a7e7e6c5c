import { InvalidInputError } from '@granule/core';
import type { StrategyRef } from '@granule/contracts';
import type { ConfigStoreClient } from '@granule/config-store-client';
import { parseStrategyDocument } from '@granule/deployment-strategy';
import type { DeploymentStrategy } from '@granule/deployment-strategy';
import type { StrategySource } from '@granule/run-coordination';
import type { NodeSpec } from '@granule/task-model';

const nodeOf = (raw: unknown): NodeSpec => {
  const n = raw as Partial<NodeSpec> & { uid: unknown };
  return {
    uid: String(n.uid),
    roles: n.roles ?? [],
    ...(n.name ? { name: n.name } : {}),
    ...(n.tags ? { tags: n.tags } : {}),
    ...(n.labels ? { labels: n.labels } : {}),
    ...(n.rack ? { rack: n.rack } : {}),
  };
};

/** Strategies given inline or uploaded to config-store by name; nodes from the inline inputs or the environment. */
export class ConfigStoreStrategySource implements StrategySource {
  constructor(private readonly configStore: ConfigStoreClient) {}

  async resolve(
    ref: StrategyRef,
    request: { envId?: string; inlineNodes?: unknown[] },
  ): Promise<{ strategy: DeploymentStrategy; nodes: NodeSpec[] }> {
    const nodes = request.envId
      ? (await this.configStore.request('node.list', { environment: request.envId })).map((n) => ({
          uid: n.uid,
          name: n.hostname,
          roles: [...n.roles, ...n.pending_roles],
          tags: n.tags,
          labels: n.labels,
          ...(n.rack ? { rack: n.rack } : {}),
        }))
      : (request.inlineNodes ?? []).map(nodeOf);
    const [text, file] = ref.inline
      ? [ref.inline, 'inline strategy']
      : [
          (await this.configStore.request('strategy.get', { name: ref.name as string })).document,
          `strategy ${ref.name}`,
        ];
    const parsed = parseStrategyDocument(text as never, file, nodes);
    const errors = parsed.diagnostics.filter((d) => d.severity === 'error');
    if (errors.length > 0 || !parsed.strategy) throw new InvalidInputError(errors);
    return { strategy: parsed.strategy, nodes };
  }
}
