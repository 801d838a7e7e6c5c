import { Controller, Inject, Logger } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { Allow } from '@granule/nats-endpoints';
import type { PlannedMessage } from '@granule/contracts';
import type { PlannerMetrics } from '@granule/observability';
import { PlanRequestHandler } from './plan-request.handler';

/** Replicas share `<prefix>.planner.plan` through this queue group: each request reaches one of them. */
export const GRAPH_PLANNER_QUEUE = 'graph-planner';

/** Injection token of the planner's metrics (`granule_planner_*`). */
export const PLANNER_METRICS = Symbol('PLANNER_METRICS');

/**
 * graph-planner's endpoint, `<prefix>.planner.plan`: a plan request in, the stored plan's id out
 * (or the refusal `granule plan` would print). Planning is CPU-bound; more replicas give more
 * throughput.
 */
@Controller()
export class PlanController {
  private readonly logger = new Logger('graph-planner');

  constructor(
    @Inject(PlanRequestHandler) private readonly handler: PlanRequestHandler,
    @Inject(PLANNER_METRICS) private readonly metrics: Pick<PlannerMetrics, 'planned'>,
  ) {}

  @MessagePattern('planner.plan')
  @Allow('orchestrator', 'operator', 'admin')
  async plan(@Payload() request: unknown): Promise<PlannedMessage> {
    const started = Date.now();
    try {
      const planned = await this.handler.handle(request);
      this.metrics.planned(planned.planId === '' ? 'validated' : 'planned', (Date.now() - started) / 1000);
      this.logger.log(
        `planned ${planned.planId}: ${planned.instances} instances, ${planned.nodes.length} nodes, ${Date.now() - started} ms`,
      );
      return planned;
    } catch (err) {
      const code = (err as { code?: string }).code ?? 'INTERNAL';
      this.metrics.planned(
        code === 'PLAN_INTERNAL' || code === 'INTERNAL' ? 'failed' : 'refused',
        (Date.now() - started) / 1000,
      );
      this.logger.log(`refused (${code}) in ${Date.now() - started} ms`);
      throw err;
    }
  }
}
