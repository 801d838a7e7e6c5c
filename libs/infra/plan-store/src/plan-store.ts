import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { SYNC_NODE } from '@granule/planner';
import type { Plan } from '@granule/planner';
import { decodePlanDocument, decodePlanRange, decodePlanStream, encodePlan } from './plan-encoding';
import type { EncodePlanOptions, PlanDocument, PlanRange, PlanTrailer } from './plan-encoding';
import type { PlanInstance } from '@granule/planner';
import { PlanNotFoundError } from './plan-store.errors';

/** What `PlanStore.save` records beside the plan. */
export interface SavePlanMeta {
  /** The request the plan was built from, kept for audit (stored as jsonb). */
  inputs?: unknown;
}

/** A stored plan's summary, as graph-planner's reply carries it. */
export interface StoredPlanSummary {
  planId: string;
  /** sha256 (hex) of the plan JSON: equal hashes mean equal plans. */
  planHash: string;
  /** Number of plan entries (task × node, sync points included). */
  instances: number;
  /** Number of tasks after the merge (standard stages included). */
  tasks: number;
  /** Node uids the plan covers, in NODES order (without the virtual `sync` node). */
  nodes: string[];
}

/** A summary plus what only the store knows. */
export interface StoredPlanInfo extends StoredPlanSummary {
  createdAt: Date;
  /** Size of the stored gzip. */
  storedBytes: number;
}

interface SummaryRow {
  id: string;
  hash: string;
  instances: number | null;
  tasks: number | null;
  nodes: string[] | null;
  created_at: Date;
  stored_bytes: number;
}

/**
 * Plans graph-planner produced, in `granule_plans` (see `PLAN_STORE_MIGRATIONS`). Every save
 * gets a new random id (uuid), so each request keeps its own inputs and time for audit; an
 * identical plan has the same `planHash`.
 */
export class PlanStore {
  constructor(
    private readonly dataSource: DataSource,
    private readonly encoding: EncodePlanOptions = {},
  ) {}

  /** Serialises (gzip of the plan JSON), hashes and stores the plan; returns its id and summary. */
  async save(plan: Plan, meta: SavePlanMeta = {}): Promise<StoredPlanSummary> {
    const encoded = encodePlan(plan, this.encoding);
    const summary: StoredPlanSummary = { ...describePlan(plan, encoded.hash), planId: randomUUID() };
    await this.dataSource.query(
      `INSERT INTO granule_plans (id, hash, instances, tasks, nodes, document, inputs) VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7::jsonb)`,
      [
        summary.planId,
        summary.planHash,
        summary.instances,
        summary.tasks,
        JSON.stringify(summary.nodes),
        encoded.gzip,
        meta.inputs === undefined ? null : JSON.stringify(meta.inputs),
      ],
    );
    return summary;
  }

  /** The plan as `granule plan -o json` prints it. Throws `PlanNotFoundError`. */
  async loadDocument(planId: string): Promise<PlanDocument> {
    return decodePlanDocument(await this.loadRaw(planId));
  }

  /**
   * The plan's instances one at a time, in order, then its groups and concurrency: for a plan
   * too large to hold as a document twice (the orchestrator builds its executable plan this way).
   */
  async streamDocument(
    planId: string,
    onInstance: (instance: PlanInstance, index: number) => void,
  ): Promise<PlanTrailer> {
    return decodePlanStream(await this.loadRaw(planId), onInstance);
  }

  /**
   * A page of the plan's instances from index `from` while `take` says to (`decodePlanRange`):
   * the ones before are counted, not parsed, and nothing after the page is read.
   */
  async loadRange(
    planId: string,
    from: number,
    take: (instance: PlanInstance, taken: number) => boolean,
  ): Promise<PlanRange> {
    return decodePlanRange(await this.loadRaw(planId), from, take);
  }

  /** The stored gzip bytes (serve with `Content-Encoding: gzip`). Throws `PlanNotFoundError`. */
  async loadRaw(planId: string): Promise<Buffer> {
    const rows: Array<{ document: Buffer }> = await this.dataSource.query(
      `SELECT document FROM granule_plans WHERE id = $1`,
      [planId],
    );
    if (rows.length === 0) throw new PlanNotFoundError(planId);
    return rows[0].document;
  }

  /** Summary of a stored plan without unpacking it. Throws `PlanNotFoundError`. */
  async loadSummary(planId: string): Promise<StoredPlanInfo> {
    const rows: SummaryRow[] = await this.dataSource.query(
      `SELECT id, hash, instances, tasks, nodes, created_at, octet_length(document) AS stored_bytes FROM granule_plans WHERE id = $1`,
      [planId],
    );
    if (rows.length === 0) throw new PlanNotFoundError(planId);
    const row = rows[0];
    return {
      planId: row.id,
      planHash: row.hash,
      instances: row.instances ?? 0,
      tasks: row.tasks ?? 0,
      nodes: row.nodes ?? [],
      createdAt: row.created_at,
      storedBytes: Number(row.stored_bytes),
    };
  }
}

/** What a plan request answers about a plan, its id aside (the hash is computed when not given). */
export function describePlan(plan: Plan, hash?: string): Omit<StoredPlanSummary, 'planId'> {
  return {
    planHash: hash ?? encodePlan(plan).hash,
    instances: plan.order.length,
    tasks: plan.tasks.length,
    nodes: plan.nodeNames.filter((n) => n !== SYNC_NODE),
  };
}
