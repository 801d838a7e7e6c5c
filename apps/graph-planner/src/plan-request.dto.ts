import { Type } from 'class-transformer';
import { IsNotEmpty, IsOptional, IsString, MaxLength, ValidateNested } from 'class-validator';
import { InlinePlanInputDto, PlanFiltersDto } from '@granule/contracts/dto';

/** The envelope of a request on `<prefix>.planner.plan` (`PlanRequestMessage`), validated at the edge. */
export class PlanRequestDto {
  @IsOptional() @IsString() @MaxLength(128) runId?: string;
  @IsOptional() @IsString() @IsNotEmpty() @MaxLength(128) envId?: string;
  @IsOptional() @ValidateNested() @Type(() => InlinePlanInputDto) inline?: InlinePlanInputDto;
  @IsString() @IsNotEmpty() graph = 'default';
  @IsOptional() @ValidateNested() @Type(() => PlanFiltersDto) filters?: PlanFiltersDto;
}
