import { Controller, Inject, Logger } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { Allow } from '@granule/nats-endpoints';
import type { PlannedMessage } from '@granule/contracts';
import { PlanRequestHandler } from './plan-request.handler';

/** Replicas share `<prefix>.planner.plan` through this queue group: each request reaches one of them. */
export const GRAPH_PLANNER_QUEUE = 'graph-planner';

/**
 * graph-planner's endpoint, `<prefix>.planner.plan`: a plan request in, the stored plan's id out
 * (or the refusal `granule plan` would print). Planning is CPU-bound; more replicas give more
 * throughput.
 */
@Controller()
export class PlanController {
  private readonly logger = new Logger('graph-planner');

  constructor(@Inject(PlanRequestHandler) private readonly handler: PlanRequestHandler) {}

  @MessagePattern('planner.plan')
  @Allow('orchestrator', 'operator', 'admin')
  async plan(@Payload() request: unknown): Promise<PlannedMessage> {
    const started = Date.now();
    try {
      const planned = await this.handler.handle(request);
      this.logger.log(
        `planned ${planned.planId}: ${planned.instances} instances, ${planned.nodes.length} nodes, ${Date.now() - started} ms`,
      );
      return planned;
    } catch (err) {
      this.logger.log(`refused (${(err as { code?: string }).code ?? 'INTERNAL'}) in ${Date.now() - started} ms`);
      throw err;
    }
  }
}
