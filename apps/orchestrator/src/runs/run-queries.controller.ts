import { Controller, Inject } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { Allow } from '@granule/nats-endpoints';
import type {
  ExpiredCommandEntry,
  RunEventEntry,
  RunEventsRequest,
  RunGraphReply,
  RunGraphRequest,
  RunListEntry,
  RunShowRequest,
  RunSummary,
  RunsListRequest,
} from '@granule/contracts';
import { RunQueries } from './run-queries';

/**
 * The run history endpoints, `<prefix>.runs.{list,events,show,graph}` (queue group `orchestrator`):
 * people read them, viewers too, and config-store's HTTP API forwards to all but the graph (ADR 0032).
 */
@Controller()
export class RunQueriesController {
  constructor(@Inject(RunQueries) private readonly queries: RunQueries) {}

  @MessagePattern('runs.list')
  @Allow('viewer', 'operator', 'admin', 'config-store')
  list(@Payload() q: RunsListRequest): Promise<RunListEntry[]> {
    return this.queries.list(q);
  }

  @MessagePattern('runs.events')
  @Allow('viewer', 'operator', 'admin', 'config-store')
  events(@Payload() q: RunEventsRequest): Promise<(RunEventEntry | ExpiredCommandEntry)[]> {
    return this.queries.eventsReply(q);
  }

  @MessagePattern('runs.show')
  @Allow('viewer', 'operator', 'admin', 'config-store')
  show(@Payload() q: RunShowRequest): Promise<RunSummary> {
    return this.queries.show(q);
  }

  @MessagePattern('runs.graph')
  @Allow('viewer', 'operator', 'admin')
  graph(@Payload() q: RunGraphRequest): Promise<RunGraphReply> {
    return this.queries.graph(q);
  }
}
