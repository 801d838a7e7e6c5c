import type { NatsConnection } from '@nats-io/transport-node';
import type { PlanReplyMessage, PlanRequestMessage } from '@granule/contracts';
import { ExecutablePlanBuilder } from '@granule/deployment-run';
import type { ExecutablePlan } from '@granule/deployment-run';
import { ServiceUnavailableError } from '@granule/messaging';
import type { PlanSource } from '@granule/run-coordination';
import { requestPlan } from '@granule/plan-store';
import type { PlanStore } from '@granule/plan-store';

export interface PlannerWaitOptions {
  /** How long a run waits for a graph-planner to answer before it is refused (ms). Default 30 s. */
  waitMs?: number;
  /** Pause between two questions while none answers (ms). Default 1 s. */
  retryEveryMs?: number;
  /** Told once per request that nobody answers yet and how long it is waited for. */
  onWaiting?: (message: string, runId: string | undefined) => void;
  /** Plans kept in memory, least recently used dropped first. Default 64. */
  maxCachedPlans?: number;
}

/**
 * Plans come from graph-planner over NATS and are read back from the plan store (kept per plan id).
 *
 * A request that no graph-planner can take (none subscribed: restarting, reconnecting after a
 * NATS restart, not started yet in a rollout; or this orchestrator's own connection is down) is
 * asked again every second for up to `waitMs` before the run is refused: a planner that is
 * briefly away must not refuse a deployment.
 *
 * Loaded plans are kept for the runs that load them again (recovery, retry, queries), at most
 * `maxCachedPlans`, least recently used first out: a run holds its own plan while it runs.
 */
export class StoredPlanSource implements PlanSource {
  private readonly cache = new Map<string, Promise<ExecutablePlan>>();
  private readonly waitMs: number;
  private readonly retryEveryMs: number;
  private readonly maxCached: number;

  constructor(
    private readonly nats: NatsConnection,
    private readonly prefix: string,
    private readonly store: PlanStore,
    private readonly wait: PlannerWaitOptions = {},
  ) {
    this.waitMs = wait.waitMs ?? 30_000;
    this.retryEveryMs = wait.retryEveryMs ?? 1000;
    this.maxCached = wait.maxCachedPlans ?? 64;
  }

  async request(request: PlanRequestMessage): Promise<PlanReplyMessage> {
    const deadline = Date.now() + this.waitMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await requestPlan(this.nats, this.prefix, request);
      } catch (err) {
        const away =
          (err instanceof ServiceUnavailableError && err.away) || (!this.nats.isClosed() && isDisconnected(err));
        if (!away) throw err;
        if (Date.now() + this.retryEveryMs > deadline) {
          if (attempt === 1) throw err;
          throw new ServiceUnavailableError(
            'PLANNER_UNAVAILABLE',
            'graph-planner',
            `${(err as Error).message} (waited ${Math.round(this.waitMs / 1000)} s)`,
            { cause: err },
          );
        }
        if (attempt === 1)
          this.wait.onWaiting?.(
            `no graph-planner answers yet (${(err as Error).message}); asking again every ${this.retryEveryMs / 1000} s for up to ${Math.round(this.waitMs / 1000)} s`,
            request.runId,
          );
        await new Promise((resolve) => setTimeout(resolve, this.retryEveryMs));
      }
    }
  }

  load(planId: string): Promise<ExecutablePlan> {
    let plan = this.cache.get(planId);
    if (plan) {
      // Most recently used last: a Map iterates in insertion order.
      this.cache.delete(planId);
      this.cache.set(planId, plan);
      return plan;
    }
    plan = this.loadExecutable(planId);
    plan.catch(() => this.cache.delete(planId));
    this.cache.set(planId, plan);
    while (this.cache.size > this.maxCached) this.cache.delete(this.cache.keys().next().value as string);
    return plan;
  }

  /** Streams the stored plan into the executor's shape: the document itself is never held whole. */
  private async loadExecutable(planId: string): Promise<ExecutablePlan> {
    const builder = new ExecutablePlanBuilder();
    const { groups, concurrency } = await this.store.streamDocument(planId, (inst) => builder.add(inst));
    return builder.finish(groups, concurrency);
  }

  /** Plan ids in memory, least recently used first. */
  cached(): string[] {
    return [...this.cache.keys()];
  }

  forget(planId: string): void {
    this.cache.delete(planId);
  }
}

/** The request could not be sent: this orchestrator's NATS connection is down (it reconnects). */
function isDisconnected(err: unknown): boolean {
  return err instanceof Error && /disconnect/i.test(err.message);
}
