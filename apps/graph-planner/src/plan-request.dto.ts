import { Type } from 'class-transformer';
import { IsBoolean, IsNotEmpty, IsString, MaxLength, ValidateNested } from 'class-validator';
import { InlinePlanInputDto, Optional, PlanFiltersDto, StoredInputsRefDto } from '@granule/contracts/dto';

/**
 * The envelope of a request on `<prefix>.planner.plan` (`PlanRequestMessage`), validated at the
 * edge. A field may be left out; `null` is refused like any other wrong value.
 */
export class PlanRequestDto {
  @Optional() @IsString() @MaxLength(128) runId?: string;
  @Optional() @IsString() @IsNotEmpty() @MaxLength(128) envId?: string;
  @Optional() @ValidateNested() @Type(() => InlinePlanInputDto) inline?: InlinePlanInputDto;
  /** The inline inputs, kept in the inputs object store (too large for one message). */
  @Optional() @ValidateNested() @Type(() => StoredInputsRefDto) inputs?: StoredInputsRefDto;
  @IsString() @IsNotEmpty() graph = 'default';
  @Optional() @ValidateNested() @Type(() => PlanFiltersDto) filters?: PlanFiltersDto;
  /** Plan and check only; nothing is stored and `planId` is empty. */
  @Optional() @IsBoolean() validateOnly?: boolean;
}
