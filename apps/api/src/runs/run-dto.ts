import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayNotEmpty,
  IsArray,
  IsDefined,
  IsISO8601,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  ValidateNested,
} from 'class-validator';
import { IDEMPOTENCY_KEY_PATTERN, IDEMPOTENCY_KEY_RULE, NAME_PATTERN } from '@chronicle/domain';

/** POST /v1/jobs/{name}/runs: neither runAt nor delaySeconds means due now. */
export class EnqueueBody {
  @ApiPropertyOptional()
  @IsOptional()
  @IsDefined()
  payload?: unknown;

  @ApiPropertyOptional()
  @IsOptional()
  @IsISO8601({ strict: true, strictSeparator: true })
  runAt?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(31_536_000)
  delaySeconds?: number;

  @ApiPropertyOptional({
    enum: ['queue', 'reject'],
    description:
      'reject: 409 concurrency-limit when the run would have to wait (the job has its limit of runs leased or due); queue (default): the run waits',
  })
  @IsOptional()
  @IsIn(['queue', 'reject'])
  ifRunning?: 'queue' | 'reject';
}

export class BatchRunBody extends EnqueueBody {
  @ApiProperty()
  @IsString()
  @Matches(NAME_PATTERN, { message: 'job must be a job name' })
  job!: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @Matches(IDEMPOTENCY_KEY_PATTERN, { message: `idempotencyKey must be ${IDEMPOTENCY_KEY_RULE}` })
  idempotencyKey?: string;
}

/** POST /v1/runs:batch: up to 1,000 runs in one call, for bulk producers. */
export class BatchEnqueueBody {
  @ApiProperty({ type: () => [BatchRunBody] })
  @IsArray()
  @ArrayNotEmpty()
  @ArrayMaxSize(1000)
  @ValidateNested({ each: true })
  @Type(() => BatchRunBody)
  runs!: BatchRunBody[];
}
