import type { DataSource, EntityManager } from 'typeorm';
import type { ArtifactStore } from '@granule/artifacts';
import { TERMINAL_RUN_EVENTS } from '@granule/run-events';

/** Events that start (or restart) a run or a strategy run, and those that end one. */
const RUN_STARTS = ['DeploymentRequested', 'DeploymentResumed', 'StrategyAccepted'];
const RUN_ENDS = [...TERMINAL_RUN_EVENTS, 'StrategyReported'];

/** How often config-store deletes the removed packages no run needs any more. */
export const ARTIFACT_SWEEP_INTERVAL_MS = 60_000;

/**
 * Records that a removed plugin's or release's deployment files may go once every run that was
 * not ended at this point of the event log has ended (in the removal's transaction).
 */
export async function recordArtifactRemoval(em: EntityManager, digest: string | null): Promise<void> {
  if (!digest) return;
  await em.query(
    `INSERT INTO config_artifact_removals (digest, log_position)
     VALUES ($1, (SELECT coalesce(max(global_position), 0) FROM granule_events))
     ON CONFLICT (digest) DO UPDATE SET log_position = EXCLUDED.log_position, removed_at = now()`,
    [digest],
  );
}

/** What a sweep did with each removed package. */
export interface SweepResult {
  /** Deleted from the artifacts bucket. */
  deleted: string[];
  /** Installed again meanwhile: kept, and no longer waiting. */
  kept: string[];
  /** Still waiting for a run that is not ended (digest and that run's stream). */
  waiting: { digest: string; run: string }[];
}

/**
 * Deferred deletion of removed packages (ADR 0026): removing a plugin or release never deletes
 * its files at once, since a run planned before may still dispatch tasks that name them. A sweep
 * deletes a removed package's files once no installed plugin or release has the same digest
 * and no run or strategy run that had started by the removal is still not ended.
 */
export class ArtifactRetention {
  constructor(
    private readonly ds: DataSource,
    private readonly artifacts: ArtifactStore,
  ) {}

  async sweep(): Promise<SweepResult> {
    const result: SweepResult = { deleted: [], kept: [], waiting: [] };
    const removals: { digest: string; log_position: string }[] = await this.ds.query(
      `SELECT digest, log_position FROM config_artifact_removals ORDER BY removed_at`,
    );
    for (const { digest, log_position: position } of removals) {
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
      const open: { stream_id: string }[] = await this.ds.query(
        `SELECT s.stream_id FROM granule_events s
          WHERE s.type = ANY($1) AND s.global_position <= $2
            AND NOT EXISTS (SELECT 1 FROM granule_events e
                             WHERE e.stream_id = s.stream_id AND e.global_position > s.global_position
                               AND e.type = ANY($3))
          ORDER BY s.global_position LIMIT 1`,
        [RUN_STARTS, position, RUN_ENDS],
      );
      if (open.length > 0) {
        result.waiting.push({ digest, run: open[0].stream_id });
        continue;
      }
      await this.artifacts.delete(digest);
      await this.forget(digest, position);
      result.deleted.push(digest);
    }
    return result;
  }

  // Only the row the sweep read: a removal recorded again meanwhile waits for its own runs.
  private async forget(digest: string, position: string): Promise<void> {
    await this.ds.query(`DELETE FROM config_artifact_removals WHERE digest = $1 AND log_position = $2`, [
      digest,
      position,
    ]);
  }
}
