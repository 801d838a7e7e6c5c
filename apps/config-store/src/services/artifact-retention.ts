import type { DataSource, EntityManager } from 'typeorm';
import type { ArtifactStore } from '@granule/artifacts';
import { MAX_COMMAND_TTL_SECONDS } from '@granule/contracts';
import { lastGlobalPosition, runsThatMayDispatch } from '@granule/event-store';
import { PlanStore } from '@granule/plan-store';
import { PACKAGE_PARAMETER } from '@granule/plugin';

/** How often config-store deletes the removed packages no run needs any more. */
export const ARTIFACT_SWEEP_INTERVAL_MS = 60_000;

/**
 * How long a removed package's files are kept at least: the longest a command may wait on the
 * command stream (ADR 0021, a day) plus the CLI's 10 s of grace. A deploy the CLI sent before
 * the removal, whose package it stored itself or whose plan is made meanwhile, can start only
 * within that time; after it, every run that may use the files is in the event log.
 */
export const ARTIFACT_REMOVAL_HOLD_MS = (MAX_COMMAND_TTL_SECONDS + 10) * 1000;

/**
 * Records that a removed plugin's or release's deployment files may go once no run may use them
 * (in the removal's transaction, with the event log's position and time).
 */
export async function recordArtifactRemoval(em: EntityManager, digest: string | null): Promise<void> {
  if (!digest) return;
  await em.query(
    `INSERT INTO config_artifact_removals (digest, log_position) VALUES ($1, $2)
     ON CONFLICT (digest) DO UPDATE SET log_position = EXCLUDED.log_position, removed_at = now()`,
    [digest, await lastGlobalPosition(em)],
  );
}

/** What a sweep did with each removed package. */
export interface SweepResult {
  /** Deleted from the artifacts bucket. */
  deleted: string[];
  /** Installed again meanwhile: kept, and no longer waiting. */
  kept: string[];
  /**
   * Still kept: until a time (`until`, the removal plus {@link ARTIFACT_REMOVAL_HOLD_MS}), or
   * for a run that may still dispatch tasks naming it, or that is being planned (`run`).
   */
  waiting: { digest: string; run?: string; until?: string }[];
}

/** Plans read for their packages, kept by id (a stored plan never changes); at most this many. */
const PLAN_CACHE_SIZE = 256;

/**
 * Deferred deletion of removed packages (ADR 0026): removing a plugin or release never deletes
 * its files at once, since a run may still dispatch tasks that name them. A sweep deletes a
 * removed package's files once no installed plugin or release has the same digest, the removal
 * is older than {@link ARTIFACT_REMOVAL_HOLD_MS}, no run that may still dispatch (going on,
 * queued, or stopped and so resumable) has a stored plan that names the digest, and no such run
 * is still being planned (it has no plan yet, so it may get one that names it).
 */
export class ArtifactRetention {
  private readonly plans: PlanStore;
  private readonly packagesOfPlan = new Map<string, Set<string>>();
  private readonly holdMs: number;

  constructor(
    private readonly ds: DataSource,
    private readonly artifacts: ArtifactStore,
    options: { holdMs?: number } = {},
  ) {
    this.plans = new PlanStore(ds);
    this.holdMs = options.holdMs ?? ARTIFACT_REMOVAL_HOLD_MS;
  }

  async sweep(): Promise<SweepResult> {
    const result: SweepResult = { deleted: [], kept: [], waiting: [] };
    const removals: { digest: string; log_position: string; age_ms: number; removed_at: Date }[] = await this.ds.query(
      `SELECT digest, log_position, removed_at, extract(epoch FROM now() - removed_at) * 1000 AS age_ms
           FROM config_artifact_removals ORDER BY removed_at`,
    );
    if (removals.length === 0) return result;
    let runs: { streamId: string; packages?: Set<string> }[] | undefined;
    for (const { digest, log_position: position, age_ms: age, removed_at: removedAt } of removals) {
      const installed: unknown[] = await this.ds.query(
        `SELECT 1 FROM config_plugins WHERE artifact_digest = $1
         UNION ALL SELECT 1 FROM config_releases WHERE artifact_digest = $1 LIMIT 1`,
        [digest],
      );
      if (installed.length > 0) {
        await this.forget(digest, position);
        result.kept.push(digest);
        continue;
      }
      if (Number(age) < this.holdMs) {
        result.waiting.push({ digest, until: new Date(new Date(removedAt).getTime() + this.holdMs).toISOString() });
        continue;
      }
      runs ??= await this.runsThatMayDispatch();
      // A run being planned (no plan yet) may get one naming any package: wait for it too.
      const holder = runs.find((r) => r.packages === undefined || r.packages.has(digest));
      if (holder) {
        result.waiting.push({ digest, run: holder.streamId });
        continue;
      }
      await this.artifacts.delete(digest);
      await this.forget(digest, position);
      result.deleted.push(digest);
    }
    return result;
  }

  /** The runs that may still dispatch, each with the packages its plans name (undefined: no plan yet). */
  private async runsThatMayDispatch(): Promise<{ streamId: string; packages?: Set<string> }[]> {
    const out: { streamId: string; packages?: Set<string> }[] = [];
    for (const run of await runsThatMayDispatch(this.ds)) {
      if (run.planIds.length === 0) {
        out.push({ streamId: run.streamId });
        continue;
      }
      const packages = new Set<string>();
      try {
        for (const planId of run.planIds) for (const d of await this.packagesOf(planId)) packages.add(d);
      } catch {
        // A plan that cannot be read may name anything: the run holds every removed package.
        out.push({ streamId: run.streamId });
        continue;
      }
      out.push({ streamId: run.streamId, packages });
    }
    return out;
  }

  /** The digests a stored plan's tasks name in `$package`, read instance by instance. */
  private async packagesOf(planId: string): Promise<Set<string>> {
    const cached = this.packagesOfPlan.get(planId);
    if (cached) return cached;
    const digests = new Set<string>();
    await this.plans.streamDocument(planId, (instance) => {
      const ref = instance.parameters?.[PACKAGE_PARAMETER] as { digest?: unknown } | undefined;
      if (typeof ref?.digest === 'string') digests.add(ref.digest);
    });
    if (this.packagesOfPlan.size >= PLAN_CACHE_SIZE) this.packagesOfPlan.clear();
    this.packagesOfPlan.set(planId, digests);
    return digests;
  }

  // Only the row the sweep read: a removal recorded again meanwhile waits for its own runs.
  private async forget(digest: string, position: string): Promise<void> {
    await this.ds.query(`DELETE FROM config_artifact_removals WHERE digest = $1 AND log_position = $2`, [
      digest,
      position,
    ]);
  }
}
