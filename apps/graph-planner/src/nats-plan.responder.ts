import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { executionSubjects } from '@granule/contracts';
import { GraphPlannerConfig } from './graph-planner.config';
import { PlanRequestHandler } from './plan-request.handler';

/** Injection token of the service's NATS connection. */
export const NATS_CONNECTION = Symbol('NATS_CONNECTION');

/** Replicas share `<prefix>.planner.plan` through this queue group: each request reaches one of them. */
export const GRAPH_PLANNER_QUEUE = 'graph-planner';

/**
 * Answers plan requests over core NATS request/reply with plain JSON (`PlanRequestMessage` in,
 * `PlanReplyMessage` out), so any NATS client (`nats req`, the orchestrator's `requestPlan`) can
 * ask. Requests are handled one at a time per replica: planning is CPU-bound, more replicas
 * give more throughput.
 */
@Injectable()
export class NatsPlanResponder implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('graph-planner');
  private subscription?: Subscription;
  private serving?: Promise<void>;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nats: NatsConnection,
    private readonly config: GraphPlannerConfig,
    private readonly handler: PlanRequestHandler,
  ) {}

  onApplicationBootstrap(): void {
    const subject = executionSubjects(this.config.subjectPrefix).planner.plan;
    this.subscription = this.nats.subscribe(subject, { queue: GRAPH_PLANNER_QUEUE });
    this.serving = this.serve(this.subscription);
    this.logger.log(`answering ${subject} (queue group ${GRAPH_PLANNER_QUEUE})`);
  }

  private async serve(subscription: Subscription): Promise<void> {
    for await (const msg of subscription) {
      const started = Date.now();
      const reply = await this.handler.handle(msg.data);
      if (msg.reply) msg.respond(JSON.stringify(reply));
      const ms = Date.now() - started;
      if (reply.ok)
        this.logger.log(`planned ${reply.planId}: ${reply.instances} instances, ${reply.nodes.length} nodes, ${ms} ms`);
      else this.logger.log(`refused (${reply.code}) in ${ms} ms`);
    }
  }

  /** Stops taking requests and finishes the one in progress. */
  async onModuleDestroy(): Promise<void> {
    await this.subscription?.drain();
    await this.serving;
  }
}
