import type { NatsConnection } from '@nats-io/transport-node';
import type { PlanReplyMessage, PlanRequestMessage } from '@granule/contracts';
import { toExecutablePlan } from '@granule/execution';
import type { ExecutablePlan } from '@granule/execution';
import type { PlanSource } from '@granule/orchestration';
import { requestPlan } from '@granule/plan-store';
import type { PlanStore } from '@granule/plan-store';

/** Plans come from graph-planner over NATS and are read back from the plan store (kept per plan id). */
export class StoredPlanSource implements PlanSource {
  private readonly cache = new Map<string, Promise<ExecutablePlan>>();

  constructor(
    private readonly nats: NatsConnection,
    private readonly prefix: string,
    private readonly store: PlanStore,
  ) {}

  request(request: PlanRequestMessage): Promise<PlanReplyMessage> {
    return requestPlan(this.nats, this.prefix, request);
  }

  load(planId: string): Promise<ExecutablePlan> {
    let plan = this.cache.get(planId);
    if (!plan) {
      plan = this.store.loadDocument(planId).then((doc) => toExecutablePlan(doc));
      plan.catch(() => this.cache.delete(planId));
      this.cache.set(planId, plan);
    }
    return plan;
  }

  forget(planId: string): void {
    this.cache.delete(planId);
  }
}
