import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { RUN_PHASES } from '@granule/contracts';

// The shapes of the runs API's answers for the OpenAPI document (ADR 0032). They describe the
// orchestrators' replies (`@granule/contracts` run-queries), which config-store passes on as they are.

export class ErrorDetail {
  @ApiProperty({ type: String, example: 'RUN_UNKNOWN', description: 'Stable error code.' })
  code!: string;
  @ApiProperty({ type: String })
  message!: string;
  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'object', additionalProperties: true },
    description: 'Every finding of invalid input (`path` names the parameter).',
  })
  diagnostics?: unknown[];
}

export class ErrorBody {
  @ApiProperty({ type: ErrorDetail })
  error!: ErrorDetail;
}

export class RunListEntryDto {
  @ApiProperty({ type: String })
  runId!: string;
  @ApiProperty({ type: String, enum: RUN_PHASES })
  phase!: string;
  @ApiProperty({ type: Number, description: 'Events recorded so far.' })
  events!: number;
  @ApiPropertyOptional({ type: String })
  envId?: string;
  @ApiPropertyOptional({ type: String })
  graph?: string;
  @ApiPropertyOptional({ type: String, description: 'The identity that signed the command.' })
  requestedBy?: string;
  @ApiProperty({ type: String, format: 'date-time' })
  startedAt!: string;
  @ApiProperty({ type: String, format: 'date-time' })
  updatedAt!: string;
}

const COUNTS = {
  type: 'object',
  additionalProperties: { type: 'number' },
  description: 'Task instances by status.',
} as const;

export class RunFailureDto {
  @ApiProperty({ type: String, description: '`task@node`' })
  key!: string;
  @ApiProperty({ type: String })
  status!: string;
  @ApiPropertyOptional({ type: String })
  error?: string;
  @ApiPropertyOptional({ type: String })
  outputTail?: string;
}

export class RunSummaryDto {
  @ApiProperty({ type: String })
  runId!: string;
  @ApiProperty({ type: String, enum: RUN_PHASES })
  phase!: string;
  @ApiProperty({ type: Number, description: 'The last event folded.' })
  version!: number;
  @ApiPropertyOptional({ type: String })
  planId?: string;
  @ApiPropertyOptional({ type: String })
  requestedBy?: string;
  @ApiPropertyOptional({ type: String })
  reason?: string;
  @ApiProperty(COUNTS)
  totals!: Record<string, number>;
  @ApiProperty({ type: 'object', additionalProperties: COUNTS, description: 'Per node: counts by status.' })
  nodes!: Record<string, Record<string, number>>;
  @ApiProperty({ type: [RunFailureDto] })
  failures!: RunFailureDto[];
  @ApiProperty({ type: [String], description: 'Task instances dispatched or running now.' })
  running!: string[];
  @ApiPropertyOptional({ type: Number })
  failedTries?: number;
  @ApiPropertyOptional({ type: Number })
  retriedTasks?: number;
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: "A strategy run's groups, their outcome and its phase runs.",
  })
  strategy?: Record<string, unknown>;
}

export class RunEventDto {
  @ApiProperty({ type: String, example: 'TaskSucceeded' })
  type!: string;
  @ApiProperty({ type: 'object', additionalProperties: true })
  data!: Record<string, unknown>;
}

export class RunEventEntryDto {
  @ApiProperty({ type: Number, description: "The event's version in its run (1, 2, ...)." })
  version!: number;
  @ApiProperty({ type: String, format: 'date-time' })
  at!: string;
  @ApiProperty({ type: RunEventDto })
  event!: RunEventDto;
}

export class ExpiredCommandEntryDto {
  @ApiProperty({ type: String, description: "The command's own stream.", example: 'command-7f3c…' })
  stream!: string;
  @ApiProperty({ type: String, format: 'date-time', description: 'When it was found expired and recorded.' })
  at!: string;
  @ApiProperty({
    type: RunEventDto,
    description:
      '`CommandExpired`: data names the command (StopDeployment, ResumeDeployment), its id, the run, ' +
      'who sent it, when it was stored, its time to live and when it was found expired.',
  })
  event!: RunEventDto;
}

export class TaskInstanceDto {
  @ApiProperty({ type: String, description: '`task@node`' })
  key!: string;
  @ApiProperty({ type: String })
  task!: string;
  @ApiProperty({ type: String })
  node!: string;
  @ApiProperty({ type: String, example: 'succeeded' })
  status!: string;
  @ApiProperty({ type: Number, description: 'Tries on the host so far.' })
  tries!: number;
  @ApiProperty({ type: Number, nullable: true })
  exitCode!: number | null;
  @ApiPropertyOptional({ type: String, format: 'date-time' })
  startedAt?: string;
  @ApiPropertyOptional({ type: Number })
  durationMs?: number;
  @ApiPropertyOptional({ type: String })
  error?: string;
  @ApiProperty({ type: String, description: 'The run it ran in (a phase run for a strategy run).' })
  runId!: string;
}

export class RunTasksDto {
  @ApiProperty({ type: String })
  runId!: string;
  @ApiProperty({ type: String, enum: RUN_PHASES })
  phase!: string;
  @ApiProperty({ type: [TaskInstanceDto] })
  tasks!: TaskInstanceDto[];
}

export class TaskLogRecordDto {
  @ApiProperty({ type: String, description: 'Position in the log store; ask for records after it.' })
  id!: string;
  @ApiProperty({ type: String })
  node!: string;
  @ApiProperty({ type: String, description: '`task@node`' })
  key!: string;
  @ApiProperty({ type: Number })
  try!: number;
  @ApiProperty({ type: String, enum: ['stdout', 'stderr'] })
  stream!: string;
  @ApiProperty({ type: String, format: 'date-time' })
  at!: string;
  @ApiProperty({ type: String })
  data!: string;
  @ApiPropertyOptional({
    type: 'object',
    properties: { limitBytes: { type: 'number' }, droppedBytes: { type: 'number' } },
    description: "Marks where a try's log was cut (its `data` is empty).",
  })
  cut?: { limitBytes: number; droppedBytes: number };
}

export class RunLogsDto {
  @ApiProperty({ type: [TaskLogRecordDto] })
  records!: TaskLogRecordDto[];
  @ApiProperty({ type: Boolean, description: 'More records follow: ask again with `after` = the last id.' })
  more!: boolean;
  @ApiProperty({ type: Boolean, description: 'The run has ended and every record is stored.' })
  ended!: boolean;
  @ApiProperty({ type: [String], description: "The runs read (a strategy run's phase runs)." })
  runIds!: string[];
  @ApiProperty({ type: Number, description: 'Output kept per try.' })
  limitBytes!: number;
}
