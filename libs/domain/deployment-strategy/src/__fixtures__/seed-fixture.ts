import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseNodesFile, type NodeSpec } from '@granule/task-model';
import { parseStrategyDocument } from '../strategy-document';
import type { DeploymentGroup, DeploymentStrategy } from '../strategy.types';

/** The seed's example strategy and the NODES fixture designed for it (see seed-nodes.yaml). */
export function seedExample(): { strategy: DeploymentStrategy; nodes: NodeSpec[] } {
  const strategy = parseStrategyDocument(readFileSync(join(__dirname, 'seed-strategy.yaml'), 'utf8'), 'seed-strategy.yaml').strategy;
  const nodes = parseNodesFile(readFileSync(join(__dirname, 'seed-nodes.yaml'), 'utf8'), 'seed-nodes.yaml').nodes;
  if (!strategy || nodes.length === 0) throw new Error('seed fixtures do not parse');
  return { strategy, nodes };
}

/** A group for tests: critical, no dependencies, selecting by tag unless selectors are given. */
export function testGroup(name: string, extra: Partial<DeploymentGroup> & { tags?: string[] } = {}): DeploymentGroup {
  const { tags, ...rest } = extra;
  return {
    name,
    critical: true,
    dependsOn: [],
    selectors: tags ? [{ nodeNames: [], nodeTags: tags, nodeLabels: [], rackNames: [] }] : [],
    ...rest,
  };
}

/** Nodes with uid = tag-less names and the given tags. */
export function testNodes(spec: Record<string, string[]>): NodeSpec[] {
  return Object.entries(spec).map(([uid, tags]) => ({ uid, roles: [], tags }));
}
