import type { DataSource, EntityManager } from 'typeorm';
import {
  INPUT_LIMITS,
  InvalidInputError,
  assertWithinLimit,
  jsonBytes,
  overLimitMessage,
  quoteFound,
  utf8Bytes,
} from '@granule/core';
import type { Diagnostic } from '@granule/core';
import { ConfigStoreError, assertRolesDefined, environmentGraph } from '@granule/config-model';
import type {
  AddNodeRequest,
  AssignNodeRequest,
  ListNodesRequest,
  NodeView,
  UpdateNodeRequest,
} from '@granule/contracts';
import type { TaskDefinition } from '@granule/task-model';
import { NodeEntity } from '../persistence/config-store.entities';
import type { EnvironmentEntity } from '../persistence/config-store.entities';
import type { CredentialService } from './credential.service';
import { findEnvironment, findNode, mapDatabaseError } from './lookups';
import { environmentLayers } from './task.service';
import { nodeView } from './views';

const LABEL_KEY = /^[A-Za-z0-9][A-Za-z0-9_./-]*$/;

/** Each label's key and value: characters, sizes (INPUT_LIMITS), and string values. */
function checkLabels(labels: Record<string, unknown>, allowNull: boolean): void {
  const diagnostics: Diagnostic[] = [];
  const bad = (key: string, message: string): void => {
    diagnostics.push({ severity: 'error', code: 'CONFIG_BAD_FIELD', path: `labels.${quoteKey(key)}`, message });
  };
  for (const [key, value] of Object.entries(labels)) {
    if (!LABEL_KEY.test(key))
      bad(key, 'expected a label key of letters, digits, _ . / -, starting with a letter or digit');
    else if (utf8Bytes(key) > INPUT_LIMITS.labelKeyBytes)
      bad(key, `label key: ${overLimitMessage(INPUT_LIMITS.labelKeyBytes, utf8Bytes(key), 'bytes')}`);
    else if (!(typeof value === 'string' || (allowNull && value === null)))
      bad(key, `expected a string${allowNull ? ' (or null to remove it)' : ''}, got ${quoteFound(value)}`);
    else if (typeof value === 'string' && utf8Bytes(value) > INPUT_LIMITS.labelValueBytes)
      diagnostics.push({
        severity: 'error',
        code: 'INPUT_TOO_LARGE',
        path: `labels.${quoteKey(key)}`,
        message: overLimitMessage(INPUT_LIMITS.labelValueBytes, utf8Bytes(value), 'bytes'),
      });
  }
  if (diagnostics.length > 0) throw new InvalidInputError(diagnostics);
}

/** A node's labels as they will be stored: at most `labelCount` of them, `labelsJsonBytes` as JSON. */
function checkLabelTotals(labels: Record<string, string>): void {
  const count = Object.keys(labels).length;
  assertWithinLimit('labels', count, INPUT_LIMITS.labelCount, 'labels');
  assertWithinLimit('labels', jsonBytes(labels), INPUT_LIMITS.labelsJsonBytes, 'bytes', 'as JSON');
}

// A key cut for messages: a 15 MB key must not come back in the refusal.
const quoteKey = (key: string): string => (key.length > 80 ? `${key.slice(0, 80)}…` : key);

/** Every task of every graph of the environment (release, enabled plugins, overrides), merged per graph. */
async function environmentTasks(em: EntityManager, env: EnvironmentEntity): Promise<TaskDefinition[]> {
  const layers = await environmentLayers(em, env);
  const types = new Set(['default', ...Object.keys(layers.release.graphs)]);
  for (const p of layers.plugins) for (const t of Object.keys(p.graphs)) types.add(t);
  return [...types].flatMap((type) => environmentGraph({ ...layers, type }));
}

/** Nodes: register, list, show, change, assign to an environment with roles, remove. */
export class NodeService {
  constructor(
    private readonly ds: DataSource,
    private readonly credentials: CredentialService,
  ) {}

  /** The nodes' views, each with its agent credential as recorded (read after the change is committed). */
  private async views(nodes: NodeEntity[]): Promise<NodeView[]> {
    const credentials = await this.credentials.ofNodes(nodes.map((n) => n.uid));
    return nodes.map((n) => nodeView(n, credentials.get(n.uid) ?? null));
  }

  private async view(node: NodeEntity): Promise<NodeView> {
    return (await this.views([node]))[0];
  }

  async add(req: AddNodeRequest): Promise<NodeView> {
    checkLabels(req.labels ?? {}, false);
    checkLabelTotals(req.labels ?? {});
    try {
      const saved = await this.ds.transaction(async (em) => {
        const repo = em.getRepository(NodeEntity);
        if (await repo.findOneBy({ uid: req.uid }))
          throw new ConfigStoreError('CONFIG_ALREADY_EXISTS', `node '${req.uid}' already exists`);
        const env = req.environment === undefined ? undefined : await findEnvironment(em, req.environment);
        // Roles given with an environment are planned in it: the same rule as assign.
        if (env && (req.roles ?? []).length > 0)
          assertRolesDefined(req.roles ?? [], await environmentTasks(em, env), env.name);
        const node = repo.create({
          uid: req.uid,
          hostname: req.hostname,
          address: req.address ?? null,
          environmentId: env?.id ?? null,
          roles: [...new Set(req.roles ?? [])],
          pendingRoles: [],
          tags: [...new Set(req.tags ?? [])],
          labels: req.labels ?? {},
          rack: req.rack ?? null,
          status: req.status ?? 'discover',
        });
        return repo.save(node);
      });
      return await this.view(saved);
    } catch (err) {
      throw mapDatabaseError(err, `node '${req.uid}'`);
    }
  }

  async list(req: ListNodesRequest): Promise<NodeView[]> {
    const repo = this.ds.getRepository(NodeEntity);
    if (req.environment === undefined) return this.views(await repo.find({ order: { uid: 'ASC' } }));
    const env = await findEnvironment(this.ds.manager, req.environment);
    return this.views(await repo.find({ where: { environmentId: env.id }, order: { uid: 'ASC' } }));
  }

  async get(uid: string): Promise<NodeView> {
    return this.view(await findNode(this.ds.manager, uid));
  }

  async update(req: UpdateNodeRequest): Promise<NodeView> {
    if (req.labels !== undefined) checkLabels(req.labels, true);
    const saved = await this.ds.transaction(async (em) => {
      const node = await findNode(em, req.uid);
      if (req.hostname !== undefined) node.hostname = req.hostname;
      if (req.address !== undefined) node.address = req.address;
      if (req.status !== undefined) node.status = req.status;
      if (req.add_tags !== undefined) node.tags = [...new Set([...node.tags, ...req.add_tags])];
      if (req.remove_tags !== undefined) node.tags = node.tags.filter((t) => !req.remove_tags?.includes(t));
      if (req.labels !== undefined) {
        const labels: Record<string, string> = { ...node.labels };
        for (const [key, value] of Object.entries(req.labels)) {
          if (value === null) delete labels[key];
          else labels[key] = value;
        }
        checkLabelTotals(labels);
        node.labels = labels;
      }
      if (req.rack !== undefined) node.rack = req.rack === null || req.rack === '' ? null : req.rack;
      return em.getRepository(NodeEntity).save(node);
    });
    return this.view(saved);
  }

  /** Puts the node in the environment with `roles` pending (they become roles once deployed). */
  async assign(req: AssignNodeRequest): Promise<NodeView> {
    const saved = await this.ds.transaction(async (em) => {
      const node = await findNode(em, req.uid);
      const env = await findEnvironment(em, req.environment);
      if (node.environmentId !== null && node.environmentId !== env.id && node.roles.length > 0) {
        throw new ConfigStoreError(
          'CONFIG_IN_USE',
          `node '${node.uid}' is deployed in environment ${node.environmentId} with roles ${node.roles.join(', ')}; remove it and add it again to move it`,
        );
      }
      assertRolesDefined(req.roles, await environmentTasks(em, env), env.name);
      node.environmentId = env.id;
      node.pendingRoles = [...req.roles];
      return em.getRepository(NodeEntity).save(node);
    });
    return this.view(saved);
  }

  async remove(uid: string): Promise<NodeView> {
    const removed = await this.ds.transaction(async (em) => {
      const node = await findNode(em, uid);
      if (node.status === 'deploying' || node.status === 'provisioning') {
        throw new ConfigStoreError(
          'CONFIG_IN_USE',
          `node '${uid}' is ${node.status}; wait until it is done (or stop the deployment) before removing it`,
        );
      }
      await em.getRepository(NodeEntity).delete({ uid });
      return node;
    });
    return this.view(removed);
  }
}
