import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayNotEmpty, IsArray, IsDefined, IsISO8601, IsIn, IsInt, IsOptional, IsString, Matches, Max, Min, ValidateNested } from 'class-validator';
import { NAME_PATTERN } from '../names';

/** POST /v1/jobs/{name}/runs: neither runAt nor delaySeconds means due now. */
export class EnqueueBody {
  @ApiPropertyOptional()
  @IsOptional() @IsDefined()
  payload?: unknown;

  @ApiPropertyOptional()
  @IsOptional() @IsISO8601({ strict: true, strictSeparator: true })
  runAt?: string;

  @ApiPropertyOptional()
  @IsOptional() @IsInt() @Min(0) @Max(31_536_000)
  delaySeconds?: number;

  @ApiPropertyOptional({ enum: ['queue', 'reject'], description: 'reject: 409 concurrency-limit when the job has its limit of runs leased; queue (default): the run waits' })
  @IsOptional() @IsIn(['queue', 'reject'])
  ifRunning?: 'queue' | 'reject';
}

export class BatchRunBody extends EnqueueBody {
  @ApiProperty()
  @IsString() @Matches(NAME_PATTERN, { message: 'job must be a job name' })
  job!: string;

  @ApiPropertyOptional()
  @IsOptional() @IsString() @Matches(/^[\x21-\x7e]{1,200}$/, { message: 'idempotencyKey must be 1-200 visible ASCII characters' })
  idempotencyKey?: string;
}

/** POST /v1/runs:batch: up to 1,000 runs in one call, for bulk producers. */
export class BatchEnqueueBody {
  @ApiProperty({ type: () => [BatchRunBody] })
  @IsArray() @ArrayNotEmpty() @ArrayMaxSize(1000) @ValidateNested({ each: true }) @Type(() => BatchRunBody)
  runs!: BatchRunBody[];
}
