import { plainToInstance } from 'class-transformer';
import { validateSync, type ValidationError } from 'class-validator';
import { GranuleError, InvalidInputError, formatDiagnostic } from '@granule/core';
import type { PlannedMessage, StoredInputsRef } from '@granule/contracts';
import { InlinePlanInputDto } from '@granule/contracts/dto';
import { buildPlan, cycleDiagnostic, PlanCycleError } from '@granule/planner';
import type { PlanFilters, PlanRequest } from '@granule/planner';
import { describePlan, type PlanStore } from '@granule/plan-store';
import {
  SECRETS_PUBLIC_KEY_VARIABLE,
  clearSecretDiagnostics,
  sealSettings,
  sealTaskDefinitions,
} from '@granule/task-model';
import type { EnvironmentInputsSource } from './environment-plan-inputs';
import { planRequestFromInline } from './inline-plan-inputs';
import { PlanRequestDto } from './plan-request.dto';

/** Codes of `{ok: false}` replies besides those of the errors raised while planning. */
export type PlanReplyErrorCode = 'PLAN_BAD_REQUEST' | 'CONFIG_STORE_UNAVAILABLE' | 'PLAN_INTERNAL';

class BadRequestError extends GranuleError<'PLAN_BAD_REQUEST'> {
  constructor(message: string) {
    super('PLAN_BAD_REQUEST', message);
  }
}

class ConfigStoreUnavailableError extends GranuleError<'CONFIG_STORE_UNAVAILABLE'> {
  constructor(envId: string) {
    super(
      'CONFIG_STORE_UNAVAILABLE',
      `cannot plan environment '${envId}': this graph-planner has no config-store connection; send the inputs inline ({inline: {graphs, nodes, cluster}})`,
    );
  }
}

/** `inline.nodes must be an array; filters.skip each value must be a string`. */
function describeValidation(errors: ValidationError[], prefix = ''): string[] {
  return errors.flatMap((e) => {
    const path = `${prefix}${e.property}`;
    const own = Object.values(e.constraints ?? {}).map((m) =>
      m.startsWith(e.property) ? `${prefix}${m}` : `${path}: ${m}`,
    );
    return [...own, ...describeValidation(e.children ?? [], `${path}.`)];
  });
}

/**
 * An `InvalidInputError` whose errors all share one code replies with that code
 * (`PLAN_UNKNOWN_GRAPH`, `PLAN_UNKNOWN_TASK`, ...), otherwise with `INVALID_INPUT`.
 */
export function replyCodeOf(err: GranuleError): string {
  if (err instanceof InvalidInputError) {
    const codes = new Set(err.diagnostics.filter((d) => d.severity === 'error').map((d) => d.code));
    // The config-store's name for the same refusal.
    if (codes.size === 1) return codes.has('CONFIG_UNKNOWN_GRAPH') ? 'PLAN_UNKNOWN_GRAPH' : [...codes][0];
  }
  return err.code;
}

/** Reads inline inputs the CLI stored because they did not fit in one message (messaging's StoredInputs). */
export interface StoredInputsSource {
  get(ref: StoredInputsRef): Promise<unknown>;
}

/** Where warnings and failures are reported (the service's log). */
export type PlanLog = (level: 'warn' | 'error', line: string) => void;

/**
 * graph-planner's work, without the transport: a request in, a stored plan out. Validates the
 * request, builds the plan (`buildPlan`), stores it (`PlanStore`) and returns its id; every
 * refusal is a `GranuleError` whose message is what `granule plan` would print for the same
 * input (file, line, task) and whose code names the refusal (`PLAN_UNKNOWN_GRAPH`, ...).
 */
export class PlanRequestHandler {
  constructor(
    private readonly store: PlanStore,
    private readonly log: PlanLog = () => undefined,
    /** Reads environments for `envId` requests; without it they are answered `CONFIG_STORE_UNAVAILABLE`. */
    private readonly environments?: EnvironmentInputsSource,
    /** Reads stored inputs for `inputs` requests. */
    private readonly storedInputs?: StoredInputsSource,
  ) {}

  async handle(body: unknown): Promise<PlannedMessage> {
    try {
      return await this.plan(body);
    } catch (err) {
      if (err instanceof GranuleError) {
        const code = replyCodeOf(err);
        throw code === err.code ? err : new GranuleError(code, err.message, { cause: err });
      }
      const message = err instanceof Error ? err.message : String(err);
      this.log('error', `plan request failed: ${message}`);
      throw new GranuleError('PLAN_INTERNAL', `graph-planner failed: ${message}`, { cause: err });
    }
  }

  private async plan(body: unknown): Promise<PlannedMessage> {
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new BadRequestError('the request must be a JSON object {graph, inline | inputs | envId, filters?}');
    const request = plainToInstance(PlanRequestDto, body);
    const problems = describeValidation(validateSync(request));
    if (problems.length > 0) throw new BadRequestError(`invalid plan request: ${problems.join('; ')}`);
    if ([request.envId, request.inline, request.inputs].filter((x) => x !== undefined).length !== 1)
      throw new BadRequestError(
        'invalid plan request: give exactly one of envId, inline inputs, or stored inline inputs (inputs)',
      );
    const filters = { ...request.filters } as PlanFilters;
    let planRequest: PlanRequest;
    let inputs = body;
    if (request.envId !== undefined) {
      if (!this.environments) throw new ConfigStoreUnavailableError(request.envId);
      planRequest = await this.environments.planRequest(request.envId, request.graph, filters);
    } else {
      const given = request.inputs ? await this.stored(request.inputs) : request.inline;
      // The plan keeps its inputs for audit: the stored ones themselves, not a reference that lapses.
      if (request.inputs) inputs = { ...body, inline: given };
      const inline = planRequestFromInline(given as InlinePlanInputDto, request.graph, filters);
      for (const w of inline.warnings) this.log('warn', `warning: ${formatDiagnostic(w)}`);
      planRequest = inline.request;
    }
    refuseClearSecrets(planRequest, request.envId === undefined ? 'inline' : `environments/${request.envId}`);
    let plan: ReturnType<typeof buildPlan>;
    try {
      plan = buildPlan(planRequest);
    } catch (err) {
      // Named as `granule plan` names it: the file and line of each task in the cycle.
      if (err instanceof PlanCycleError)
        throw new GranuleError('PLAN_CYCLE', formatDiagnostic(cycleDiagnostic(err.cycle, planRequest.tasks)), {
          cause: err,
        });
      throw err;
    }
    if (request.validateOnly) return { ...describePlan(plan), planId: '' };
    return this.store.save(plan, { inputs });
  }

  /** Stored inline inputs, validated as the same inputs sent inline would be. */
  private async stored(ref: StoredInputsRef): Promise<InlinePlanInputDto> {
    if (!this.storedInputs)
      throw new BadRequestError('this graph-planner cannot read stored inputs; send the inputs inline');
    const value = await this.storedInputs.get(ref);
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new BadRequestError(
        `invalid plan request: inputs ${ref.name} must be a JSON object {graphs, nodes, cluster?}`,
      );
    const inline = plainToInstance(InlinePlanInputDto, value);
    const problems = describeValidation(validateSync(inline), 'inputs.');
    if (problems.length > 0) throw new BadRequestError(`invalid plan request: ${problems.join('; ')}`);
    return inline;
  }
}

/**
 * A stored plan keeps its tasks' parameters and its request, so secrets reach the planner only
 * sealed (ADR 0023): a secret in clear is refused, each named, and nothing is stored.
 */
function refuseClearSecrets(request: PlanRequest, file: string): void {
  const clear = [
    ...sealTaskDefinitions(request.tasks).clear,
    ...sealSettings(request.cluster?.settings ?? {}).clear.map((c) => ({ ...c, path: ['settings', ...c.path] })),
  ];
  if (clear.length === 0) return;
  throw new InvalidInputError(
    clearSecretDiagnostics(
      clear,
      { file },
      `the planner stores plans and takes secrets only sealed: deploy with granule, which seals them with ${SECRETS_PUBLIC_KEY_VARIABLE}, or keep them in config-store, which seals them when it stores them (tasks stored before that: upload them again)`,
    ),
  );
}
