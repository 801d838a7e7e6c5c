import { Controller, Inject } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
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

/** The run history endpoints, `<prefix>.runs.{list,events,show,graph}` (queue group `orchestrator`). */
@Controller()
export class RunQueriesController {
  constructor(@Inject(RunQueries) private readonly queries: RunQueries) {}

  @MessagePattern('runs.list')
  list(@Payload() q: RunsListRequest): Promise<RunListEntry[]> {
    return this.queries.list(q);
  }

  @MessagePattern('runs.events')
  events(@Payload() q: RunEventsRequest): Promise<RunEventEntry[]> {
    return this.queries.events(q);
  }

  @MessagePattern('runs.show')
  show(@Payload() q: RunShowRequest): Promise<RunSummary> {
    return this.queries.show(q);
  }

  @MessagePattern('runs.graph')
  graph(@Payload() q: RunGraphRequest): Promise<RunGraphReply> {
    return this.queries.graph(q);
  }
}
