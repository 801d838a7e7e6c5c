import { Type } from 'class-transformer';
import { IsBoolean, IsNotEmpty, IsOptional, IsString, MaxLength, ValidateNested } from 'class-validator';
import { InlinePlanInputDto, PlanFiltersDto, StoredInputsRefDto } from '@granule/contracts/dto';

/** The envelope of a request on `<prefix>.planner.plan` (`PlanRequestMessage`), validated at the edge. */
export class PlanRequestDto {
  @IsOptional() @IsString() @MaxLength(128) runId?: string;
  @IsOptional() @IsString() @IsNotEmpty() @MaxLength(128) envId?: string;
  @IsOptional() @ValidateNested() @Type(() => InlinePlanInputDto) inline?: InlinePlanInputDto;
  /** The inline inputs, kept in the inputs object store (too large for one message). */
  @IsOptional() @ValidateNested() @Type(() => StoredInputsRefDto) inputs?: StoredInputsRefDto;
  @IsString() @IsNotEmpty() graph = 'default';
  @IsOptional() @ValidateNested() @Type(() => PlanFiltersDto) filters?: PlanFiltersDto;
  /** Plan and check only; nothing is stored and `planId` is empty. */
  @IsOptional() @IsBoolean() validateOnly?: boolean;
}
