import type { ServerResponse } from 'node:http';
import { applyDecorators, Controller, Get, Headers, Inject, Param, Query, Res, UseGuards } from '@nestjs/common';
import type { BeforeApplicationShutdown } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiExtraModels,
  ApiBearerAuth,
  ApiHeader,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiProduces,
  ApiQuery,
  ApiServiceUnavailableResponse,
  ApiTags,
  ApiTooManyRequestsResponse,
  ApiUnauthorizedResponse,
  getSchemaPath,
} from '@nestjs/swagger';
import { InvalidInputError } from '@granule/core';
import { RUN_PHASES, RUNS_LIST_MAX } from '@granule/contracts';
import type {
  ExpiredCommandEntry,
  RunEventEntry,
  RunListEntry,
  RunLogsReply,
  RunLogsRequest,
  RunSummary,
  RunTasksReply,
  RunsListRequest,
} from '@granule/contracts';
import { toReplyError } from '@granule/messaging';
import { parseEventStreamId, parseLogRecordId } from '../runs/run-stream-ids';
import { RunsGateway } from '../runs/runs-gateway';
import { currentCaller } from '../audit/caller-context';
import { ApiTokenGuard } from './api-token.guard';
import { StreamSlots } from './stream-slots';
import { checkQuery } from './config-store.controller';
import {
  ErrorBody,
  ExpiredCommandEntryDto,
  RunEventEntryDto,
  RunListEntryDto,
  RunLogsDto,
  RunSummaryDto,
  RunTasksDto,
} from './runs.schemas';

type QueryParams = Record<string, unknown>;

function badParameter(name: string, message: string): InvalidInputError {
  return new InvalidInputError([{ severity: 'error', code: 'INVALID_INPUT', path: name, message }]);
}

/** One value of a query parameter (repeating it is refused), or undefined when absent. */
function text(query: QueryParams, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw badParameter(name, 'expected one value, got several');
  return value;
}

function wholeNumber(query: QueryParams, name: string, min: number): number | undefined {
  const value = text(query, name);
  if (value === undefined) return undefined;
  if (!/^\d{1,15}$/.test(value) || Number(value) < min)
    throw badParameter(name, `expected a whole number from ${min}, got ${JSON.stringify(value)}`);
  return Number(value);
}

function flag(query: QueryParams, name: string): boolean | undefined {
  const value = text(query, name);
  if (value === undefined) return undefined;
  if (['', 'true', '1'].includes(value)) return true;
  if (['false', '0'].includes(value)) return false;
  throw badParameter(name, `expected true or false, got ${JSON.stringify(value)}`);
}

const LOG_FILTERS = ['node', 'task', 'attempt', 'stderrOnly'] as const;

/** The `runs.logs` filters of a logs request. */
function logFilters(runId: string, query: QueryParams): RunLogsRequest {
  const node = text(query, 'node');
  const task = text(query, 'task');
  const attempt = wholeNumber(query, 'attempt', 1);
  const stderrOnly = flag(query, 'stderrOnly');
  return {
    runId,
    ...(node ? { node } : {}),
    ...(task ? { task } : {}),
    ...(attempt !== undefined ? { try: attempt } : {}),
    ...(stderrOnly ? { stderrOnly } : {}),
  };
}

/** How often an idle stream sends a comment, so proxies and clients see the connection alive. */
export const SSE_KEEPALIVE_MS = 15_000;

/**
 * An open Server-Sent Events response: `send` writes one message (`id:` and `data:`), `close`
 * ends it; `signal` aborts when the client goes away.
 */
class EventStream {
  readonly signal: AbortSignal;
  private readonly aborted = new AbortController();
  private readonly keepalive: NodeJS.Timeout;

  constructor(private readonly res: ServerResponse) {
    const aborted = this.aborted;
    this.signal = aborted.signal;
    // The response's close: the client went away (or the stream ended); the request's fires too early.
    res.on('close', () => aborted.abort());
    // Gone while the run was being checked: its close has already fired.
    if (res.destroyed || res.socket?.destroyed !== false) aborted.abort();
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.flushHeaders();
    this.keepalive = setInterval(() => res.write(': keep-alive\n\n'), SSE_KEEPALIVE_MS);
    this.keepalive.unref();
  }

  /** Writes one message; resolves once the client has taken it in (a slow client is not buffered for). */
  send(data: unknown, options: { id?: string; event?: string } = {}): Promise<void> {
    const res = this.res;
    if (res.writableEnded || res.destroyed) return Promise.resolve();
    const lines = [
      ...(options.event ? [`event: ${options.event}`] : []),
      ...(options.id !== undefined ? [`id: ${options.id}`] : []),
      `data: ${JSON.stringify(data)}`,
    ];
    if (res.write(`${lines.join('\n')}\n\n`)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  }

  close(): void {
    clearInterval(this.keepalive);
    if (!this.res.writableEnded) this.res.end();
  }

  /** Ends the stream now (the service stops): the client reconnects with its last id. */
  shutdown(): void {
    this.aborted.abort();
    this.close();
  }
}

const RUN_ID = ApiParam({ name: 'id', description: 'The run id.', example: 'r-20260101-abc' });
const REFUSED = [
  ApiUnauthorizedResponse({ description: 'No API token, or not the configured one.', type: ErrorBody }),
  ApiServiceUnavailableResponse({
    description: 'No orchestrator answers (ORCHESTRATOR_UNAVAILABLE; ORCHESTRATOR_TIMEOUT is 504).',
    type: ErrorBody,
  }),
];
const NOT_FOUND = ApiNotFoundResponse({ description: 'No such run (code RUN_UNKNOWN).', type: ErrorBody });
const BAD_PARAMETER = ApiBadRequestResponse({
  description: 'A query parameter is unknown or not valid; the message names it (code INVALID_INPUT).',
  type: ErrorBody,
});
const Refusals = (): MethodDecorator => applyDecorators(...REFUSED, BAD_PARAMETER);
const STREAMS_FULL = ApiTooManyRequestsResponse({
  description:
    'As many streams are open as config-store serves, in all or for this caller (code TOO_MANY_STREAMS; ' +
    'GRANULE_HTTP_MAX_STREAMS, GRANULE_HTTP_MAX_STREAMS_PER_CALLER); `Retry-After` says when to try again.',
  type: ErrorBody,
});
const LogQuery = (): MethodDecorator =>
  applyDecorators(
    ApiQuery({ name: 'node', required: false, description: 'Only this node.' }),
    ApiQuery({ name: 'task', required: false, description: "Only this task (every node's instance of it)." }),
    ApiQuery({ name: 'attempt', required: false, type: Number, description: 'Only this try on the host (from 1).' }),
    ApiQuery({
      name: 'stderrOnly',
      required: false,
      type: Boolean,
      description: 'Only what the tasks wrote to stderr.',
    }),
  );

/**
 * The runs over HTTP (ADR 0032): each route asks the orchestrators' run queries on NATS
 * (`<prefix>.runs.*`) and passes the answer on; the two streams follow a run live as Server-Sent
 * Events until it ends. Same token as the rest of the API.
 */
@ApiTags('runs')
@ApiExtraModels(RunEventEntryDto, ExpiredCommandEntryDto)
@ApiBearerAuth()
@Controller('runs')
@UseGuards(ApiTokenGuard)
export class RunsController implements BeforeApplicationShutdown {
  /** Open streams: the HTTP server's close would wait for them, possibly until their runs end. */
  private readonly open = new Set<EventStream>();

  constructor(
    @Inject(RunsGateway) private readonly runs: RunsGateway,
    @Inject(StreamSlots) private readonly slots: StreamSlots,
  ) {}

  private closing = false;

  beforeApplicationShutdown(): void {
    this.closing = true;
    for (const stream of this.open) stream.shutdown();
  }

  /**
   * Serves one stream in a slot of its caller's (refused with 429 when none is free, before the
   * run is asked for): `check` refuses what cannot be followed as the rest of the API does, then
   * `follow` writes the stream; the slot is given back when the stream ends (a client that goes
   * away aborts it).
   */
  private async serveStream(
    res: ServerResponse,
    check: () => Promise<void>,
    follow: (stream: EventStream) => Promise<void>,
  ): Promise<void> {
    const release = this.slots.take(currentCaller().name);
    let stream: EventStream;
    try {
      await check();
      stream = new EventStream(res);
    } catch (err) {
      release();
      throw err;
    }
    this.open.add(stream);
    // Checked while the service began to stop: it ends at once, as the streams open then did.
    if (this.closing) stream.shutdown();
    try {
      await follow(stream);
    } catch (err) {
      await stream.send({ error: toReplyError(err) }, { event: 'error' });
    } finally {
      // Here, not on the response's close: a client gone while the run was checked has closed
      // it already, and its stream ends at once (its signal is aborted).
      stream.close();
      this.open.delete(stream);
      release();
    }
  }

  @Get()
  @ApiOperation({ summary: 'List runs, newest first.' })
  @ApiQuery({ name: 'env', required: false, description: 'Runs of this environment (id or name).' })
  @ApiQuery({
    name: 'status',
    required: false,
    description: `Runs in one of these phases, comma-separated: ${RUN_PHASES.join(', ')}.`,
  })
  @ApiQuery({
    name: 'since',
    required: false,
    description: 'Runs started at or after this time (ISO 8601), or this long ago (30m, 2h, 7d).',
  })
  @ApiQuery({
    name: 'until',
    required: false,
    description: 'Runs started before this time (ISO 8601), or this long ago (30m, 2h, 7d).',
  })
  @ApiQuery({
    name: 'limit',
    required: false,
    type: Number,
    description: `At most this many runs (1 to ${RUNS_LIST_MAX}).`,
  })
  @ApiOkResponse({ type: [RunListEntryDto] })
  @Refusals()
  list(@Query() query: QueryParams): Promise<RunListEntry[]> {
    checkQuery(query, ['env', 'status', 'since', 'until', 'limit']);
    const env = text(query, 'env');
    const status = text(query, 'status');
    const since = text(query, 'since');
    const until = text(query, 'until');
    const limit = wholeNumber(query, 'limit', 1);
    if (limit !== undefined && limit > RUNS_LIST_MAX)
      throw badParameter('limit', `expected a whole number from 1 to ${RUNS_LIST_MAX}, got ${limit}`);
    const q: RunsListRequest = {
      ...(env !== undefined ? { envId: env } : {}),
      ...(status !== undefined ? { phases: status.split(',').map((s) => s.trim()) } : {}),
      ...(since !== undefined ? { since } : {}),
      ...(until !== undefined ? { until } : {}),
      ...(limit !== undefined ? { limit } : {}),
    };
    return this.runs.list(q);
  }

  @Get(':id')
  @ApiOperation({ summary: "A run's state: phase, task counts per node, failures, what runs now." })
  @RUN_ID
  @ApiQuery({ name: 'at', required: false, type: Number, description: 'The state after this event (version).' })
  @ApiOkResponse({ type: RunSummaryDto })
  @NOT_FOUND
  @Refusals()
  show(@Param('id') runId: string, @Query() query: QueryParams): Promise<RunSummary> {
    checkQuery(query, ['at']);
    const at = wholeNumber(query, 'at', 1);
    return this.runs.show({ runId, ...(at !== undefined ? { at } : {}) });
  }

  @Get(':id/tasks')
  @ApiOperation({ summary: 'Every task instance of a run (a strategy run: of its phase runs).' })
  @RUN_ID
  @ApiQuery({ name: 'node', required: false, description: 'Only this node.' })
  @ApiQuery({
    name: 'status',
    required: false,
    description: 'Only instances in this status (pending, running, failed, ...).',
  })
  @ApiOkResponse({ type: RunTasksDto })
  @NOT_FOUND
  @Refusals()
  tasks(@Param('id') runId: string, @Query() query: QueryParams): Promise<RunTasksReply> {
    checkQuery(query, ['node', 'status']);
    const node = text(query, 'node');
    const status = text(query, 'status');
    return this.runs.tasks({ runId, ...(node ? { node } : {}), ...(status ? { status } : {}) });
  }

  @Get(':id/events')
  @ApiOperation({ summary: "A run's events in order (a strategy run's phase runs are runs of their own)." })
  @RUN_ID
  @ApiQuery({ name: 'after', required: false, type: Number, description: 'Events after this version.' })
  @ApiQuery({
    name: 'expiredCommands',
    required: false,
    type: Boolean,
    description:
      'Also the stops and resumes that named the run and expired before an orchestrator took them, ' +
      'among the events by time (entries with `stream` instead of `version`). Not with `after`.',
  })
  @ApiOkResponse({
    schema: {
      type: 'array',
      items: { oneOf: [RunEventEntryDto, ExpiredCommandEntryDto].map((dto) => ({ $ref: getSchemaPath(dto) })) },
    },
  })
  @NOT_FOUND
  @Refusals()
  events(@Param('id') runId: string, @Query() query: QueryParams): Promise<(RunEventEntry | ExpiredCommandEntry)[]> {
    checkQuery(query, ['after', 'expiredCommands']);
    const after = wholeNumber(query, 'after', 0);
    const expiredCommands = flag(query, 'expiredCommands');
    if (expiredCommands && after !== undefined)
      throw badParameter(
        'expiredCommands',
        'expected no after with it (an expired command has no version of the run), got both',
      );
    if (expiredCommands) return this.runs.eventsAndExpiredCommands(runId);
    return this.runs.events({ runId, ...(after ? { after } : {}) });
  }

  @Get(':id/logs')
  @ApiOperation({
    summary: "A run's task logs in order, a page at a time (a strategy run: its phase runs').",
    description: 'While `more` is true, ask again with `after` = the id of the last record.',
  })
  @RUN_ID
  @LogQuery()
  @ApiQuery({ name: 'after', required: false, description: 'Records after this record id.' })
  @ApiQuery({ name: 'limit', required: false, type: Number, description: 'At most this many records (bound 2000).' })
  @ApiOkResponse({ type: RunLogsDto })
  @NOT_FOUND
  @Refusals()
  logs(@Param('id') runId: string, @Query() query: QueryParams): Promise<RunLogsReply> {
    checkQuery(query, [...LOG_FILTERS, 'after', 'limit']);
    const after = text(query, 'after');
    const limit = wholeNumber(query, 'limit', 1);
    return this.runs.logs({
      ...logFilters(runId, query),
      ...(after !== undefined ? { after: parseLogRecordId(after, 'after') } : {}),
      ...(limit !== undefined ? { limit } : {}),
    });
  }

  @Get(':id/events/stream')
  @ApiOperation({
    summary: "Follow a run's events live (Server-Sent Events) until it ends.",
    description:
      'Each message is one event (`data`: `{runId, version, at, event}`); its `id` is the version, or for a ' +
      "strategy run's phase run the strategy event's version and the phase run's, dot-separated (`7.3`): " +
      'phase runs are followed where they start, as `granule watch` does. Reconnecting with `Last-Event-ID` ' +
      '(or `after`) resumes after that event without gaps or repeats. The last message is `event: end` with ' +
      '`{runId, phase}`; `event: error` with `{error}` if the run cannot be followed any more.',
  })
  @RUN_ID
  @ApiQuery({ name: 'after', required: false, description: 'Resume after this stream id (e.g. 12 or 7.3).' })
  @ApiHeader({ name: 'Last-Event-ID', required: false, description: 'Resume after this stream id (wins over after).' })
  @ApiProduces('text/event-stream')
  @ApiOkResponse({
    description: 'The stream.',
    content: { 'text/event-stream': { schema: { type: 'string', example: 'id: 1\ndata: {"runId":"r1",...}\n\n' } } },
  })
  @NOT_FOUND
  @STREAMS_FULL
  @Refusals()
  async eventStream(
    @Param('id') runId: string,
    @Query() query: QueryParams,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Res() res: ServerResponse,
  ): Promise<void> {
    checkQuery(query, ['after']);
    const after = text(query, 'after');
    const resume =
      lastEventId !== undefined
        ? parseEventStreamId(lastEventId, 'Last-Event-ID')
        : after !== undefined
          ? parseEventStreamId(after, 'after')
          : [];
    await this.serveStream(
      res,
      // Refusals (an unknown run, an id past its end) are answered as the rest of the API answers.
      async () => {
        const summary = await this.runs.show({ runId });
        if ((resume[0] ?? 0) > summary.version)
          throw badParameter(
            lastEventId !== undefined ? 'Last-Event-ID' : 'after',
            `run ${runId} has ${summary.version} events, got ${resume.join('.')}`,
          );
      },
      async (stream) => {
        const phase = await this.runs.followEvents(
          runId,
          resume,
          (id, entry) => stream.send(entry, { id }),
          stream.signal,
        );
        if (phase !== undefined) await stream.send({ runId, phase }, { event: 'end' });
      },
    );
  }

  @Get(':id/logs/stream')
  @ApiOperation({
    summary: "Follow a run's task logs live (Server-Sent Events) until the run ends and every record is sent.",
    description:
      'Each message is one log record (`data`: a record as in `/runs/{id}/logs`); its `id` is the record id, so ' +
      'reconnecting with `Last-Event-ID` (or `after`) resumes after it without gaps or repeats. The last message ' +
      'is `event: end` with `{runId}`; `event: error` with `{error}` if the logs cannot be followed any more.',
  })
  @RUN_ID
  @LogQuery()
  @ApiQuery({ name: 'after', required: false, description: 'Resume after this record id.' })
  @ApiHeader({ name: 'Last-Event-ID', required: false, description: 'Resume after this record id (wins over after).' })
  @ApiProduces('text/event-stream')
  @ApiOkResponse({
    description: 'The stream.',
    content: { 'text/event-stream': { schema: { type: 'string', example: 'id: 42\ndata: {"id":"42",...}\n\n' } } },
  })
  @NOT_FOUND
  @STREAMS_FULL
  @Refusals()
  async logStream(
    @Param('id') runId: string,
    @Query() query: QueryParams,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Res() res: ServerResponse,
  ): Promise<void> {
    checkQuery(query, [...LOG_FILTERS, 'after']);
    const after = text(query, 'after');
    const from =
      lastEventId !== undefined
        ? parseLogRecordId(lastEventId, 'Last-Event-ID')
        : after !== undefined
          ? parseLogRecordId(after, 'after')
          : undefined;
    const q: RunLogsRequest = { ...logFilters(runId, query), ...(from ? { after: from } : {}) };
    await this.serveStream(
      res,
      // Checks the run and the filters before the stream starts.
      async () => void (await this.runs.logs({ ...q, limit: 1 })),
      async (stream) => {
        const ended = await this.runs.followLogs(q, (record) => stream.send(record, { id: record.id }), stream.signal);
        if (ended) await stream.send({ runId }, { event: 'end' });
      },
    );
  }
}
