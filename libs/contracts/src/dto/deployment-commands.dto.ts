import { Type } from 'class-transformer';
import { ID_PATTERN, DEPLOYMENT_COMMAND_TYPES, MAX_COMMAND_TTL_SECONDS } from '../deployment-commands';
import type { DeploymentCommandType } from '../deployment-commands';
import {
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsObject,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { INPUT_LIMITS } from '@granule/core';
import { IsIdentifier, MaxItems, Optional } from './bounds';

export class PlanFiltersDto {
  @Optional() @IsString() start?: string;
  @Optional() @IsString() end?: string;
  @Optional() @IsArray() @IsString({ each: true }) skip?: string[];
  @Optional() @IsArray() @IsString({ each: true }) only?: string[];
  @Optional() @IsArray() @IsString({ each: true }) nodes?: string[];
}

/**
 * The inputs of a plan given inline (no config-store): task definitions per graph, nodes and
 * cluster data, as `granule plan` reads them from files.
 */
export class InlinePlanInputDto {
  @IsObject() graphs!: Record<string, unknown[]>;
  @IsArray() @MaxItems(INPUT_LIMITS.planNodes, 'nodes') nodes!: unknown[];
  @Optional() @IsObject() cluster?: Record<string, unknown>;
}

/** Inline inputs kept in the inputs object store: the SHA-256 (hex) of the stored JSON and its size. */
export class StoredInputsRefDto {
  @Matches(/^[0-9a-f]{64}$/, { message: 'name must be a SHA-256 digest (64 hex digits)' }) name!: string;
  @IsInt() @Min(1) size!: number;
}

export class StrategyRefDto {
  @Optional() @IsString() name?: string;
  @Optional() @IsObject() inline?: Record<string, unknown>;
}

/** Validates StartDeployment: plan environment `envId` (or the inline inputs) and run it. */
export class StartDeploymentCommand {
  @Matches(ID_PATTERN) commandId!: string;
  /** Chosen by the client so it can print it at once; the orchestrator refuses a reused id. */
  @IsIdentifier('runId') runId!: string;
  @Optional() @IsString() @MaxLength(128) envId?: string;
  @Optional() @ValidateNested() @Type(() => InlinePlanInputDto) inline?: InlinePlanInputDto;
  @Optional() @ValidateNested() @Type(() => StoredInputsRefDto) inputs?: StoredInputsRefDto;
  @IsString() graph = 'default';
  @Optional() @ValidateNested() @Type(() => PlanFiltersDto) filters?: PlanFiltersDto;
  @Optional() @ValidateNested() @Type(() => StrategyRefDto) strategy?: StrategyRefDto;
  @IsBoolean() dryRun = false;
  @IsBoolean() noop = false;
  @Optional() @IsBoolean() check?: boolean;
  @Optional() @IsBoolean() diff?: boolean;
  @Optional() @IsBoolean() waitForLocks?: boolean;
}

export class StopDeploymentCommand {
  @Matches(ID_PATTERN) commandId!: string;
  @IsIdentifier('runId') runId!: string;
}

export class ResumeDeploymentCommand {
  @Matches(ID_PATTERN) commandId!: string;
  @IsIdentifier('runId') runId!: string;
  @Optional() @IsBoolean() waitForLocks?: boolean;
}

/** RetryFailed: a new run of the same plan with only the failed (and dep_failed) task-nodes, or all unfinished ones. */
export class RetryFailedCommand {
  @Matches(ID_PATTERN) commandId!: string;
  @IsIdentifier('runId') runId!: string;
  @IsIdentifier('runId') newRunId!: string;
  @IsBoolean() failedOnly = true;
  @Optional() @IsBoolean() waitForLocks?: boolean;
}

/** The envelope on the command stream. */
export class DeploymentCommandEnvelope {
  @IsIn(DEPLOYMENT_COMMAND_TYPES as unknown as string[]) type!: DeploymentCommandType;
  @IsObject() payload!: Record<string, unknown>;
  @Optional() @IsInt() @Min(1) @Max(MAX_COMMAND_TTL_SECONDS) ttlSeconds?: number;
}
