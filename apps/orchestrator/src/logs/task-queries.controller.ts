import { Controller, Inject } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { Allow } from '@granule/nats-endpoints';
import type { RunLogsReply, RunLogsRequest, RunTasksReply, RunTasksRequest } from '@granule/contracts';
import { TaskQueries } from './task-queries';

/** `<prefix>.runs.{tasks,logs}` (queue group `orchestrator`): people read them, viewers too, and config-store's HTTP API (ADR 0032). */
@Controller()
export class TaskQueriesController {
  constructor(@Inject(TaskQueries) private readonly queries: TaskQueries) {}

  @MessagePattern('runs.tasks')
  @Allow('viewer', 'operator', 'admin', 'config-store')
  tasks(@Payload() q: RunTasksRequest): Promise<RunTasksReply> {
    return this.queries.tasks(q);
  }

  @MessagePattern('runs.logs')
  @Allow('viewer', 'operator', 'admin', 'config-store')
  logs(@Payload() q: RunLogsRequest): Promise<RunLogsReply> {
    return this.queries.logs(q);
  }
}
