import { Controller, Inject } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { Allow } from '@granule/nats-endpoints';
import type {
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

/** The run history endpoints, `<prefix>.runs.{list,events,show,graph}` (queue group `orchestrator`): people read them, viewers too. */
@Controller()
export class RunQueriesController {
  constructor(@Inject(RunQueries) private readonly queries: RunQueries) {}

  @MessagePattern('runs.list')
  @Allow('viewer', 'operator', 'admin')
  list(@Payload() q: RunsListRequest): Promise<RunListEntry[]> {
    return this.queries.list(q);
  }

  @MessagePattern('runs.events')
  @Allow('viewer', 'operator', 'admin')
  events(@Payload() q: RunEventsRequest): Promise<RunEventEntry[]> {
    return this.queries.events(q);
  }

  @MessagePattern('runs.show')
  @Allow('viewer', 'operator', 'admin')
  show(@Payload() q: RunShowRequest): Promise<RunSummary> {
    return this.queries.show(q);
  }

  @MessagePattern('runs.graph')
  @Allow('viewer', 'operator', 'admin')
  graph(@Payload() q: RunGraphRequest): Promise<RunGraphReply> {
    return this.queries.graph(q);
  }
}
