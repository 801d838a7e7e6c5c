import { InvalidInputError } from '@granule/core';
import type { StoredInputsRef, StrategyRef } from '@granule/contracts';
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

/** Reads inline inputs the CLI stored (messaging's StoredInputs). */
export interface StoredInputsReader {
  get(ref: StoredInputsRef): Promise<unknown>;
}

/**
 * Strategies given inline or uploaded to config-store by name; nodes from the inline inputs
 * (sent in the command, or stored by the CLI) or the environment.
 */
export class ConfigStoreStrategySource implements StrategySource {
  constructor(
    private readonly configStore: ConfigStoreClient,
    private readonly storedInputs?: StoredInputsReader,
  ) {}

  async resolve(
    ref: StrategyRef,
    request: { envId?: string; inlineNodes?: unknown[]; inputs?: StoredInputsRef },
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
      : (request.inputs ? await this.storedNodes(request.inputs) : (request.inlineNodes ?? [])).map(nodeOf);
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

  private async storedNodes(ref: StoredInputsRef): Promise<unknown[]> {
    if (!this.storedInputs) throw new Error('stored inputs cannot be read here');
    const nodes = ((await this.storedInputs.get(ref)) as { nodes?: unknown } | null)?.nodes;
    if (!Array.isArray(nodes))
      throw new InvalidInputError([
        {
          severity: 'error',
          code: 'INVALID_INPUT',
          path: 'inputs.nodes',
          message: `expected a list of nodes in the stored inputs ${ref.name}, got ${nodes === undefined ? 'none' : typeof nodes}`,
        },
      ]);
    return nodes;
  }
}
