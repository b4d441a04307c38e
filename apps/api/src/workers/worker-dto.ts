import { Type } from 'class-transformer';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayNotEmpty,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { NAME_PATTERN, RUN_ID_PATTERN } from '@chronicle/domain';

/** What to lease: the body of POST /v1/lease, and the `lease` of POST /v1/runs:complete. */
export class LeaseNextBody {
  @ApiProperty({ type: [String] })
  @IsArray()
  @ArrayNotEmpty()
  @ArrayMaxSize(50)
  @IsString({ each: true })
  @Matches(NAME_PATTERN, { each: true, message: 'each queue must be a queue name' })
  queues!: string[];

  @ApiProperty()
  @IsInt()
  @Min(1)
  @Max(100)
  max!: number;

  @ApiPropertyOptional()
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(3600)
  leaseSeconds?: number;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(200)
  workerId?: string;
}

export class LeaseBody extends LeaseNextBody {
  @ApiPropertyOptional()
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(30)
  waitSeconds?: number;
}

export class HeartbeatBody {
  @ApiProperty()
  @IsInt()
  @Min(0)
  fencingToken!: number;

  @ApiPropertyOptional()
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(3600)
  leaseSeconds?: number;
}

export class HeartbeatItemBody extends HeartbeatBody {
  @ApiProperty()
  @IsString()
  @Matches(RUN_ID_PATTERN, { message: 'runId must be a run id' })
  runId!: string;
}

/** POST /v1/runs:heartbeat: up to 100 heartbeats in one transaction. */
export class HeartbeatManyBody {
  @ApiProperty({ type: () => [HeartbeatItemBody] })
  @IsArray()
  @ArrayNotEmpty()
  @ArrayMaxSize(100)
  @ValidateNested({ each: true })
  @Type(() => HeartbeatItemBody)
  heartbeats!: HeartbeatItemBody[];
}

export class CompleteBody {
  @ApiProperty()
  @IsInt()
  @Min(0)
  fencingToken!: number;

  @ApiProperty()
  @IsIn(['success', 'failure'])
  outcome!: 'success' | 'failure';

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(10_000)
  error?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsBoolean()
  retryable?: boolean;
}

export class CompleteItemBody extends CompleteBody {
  @ApiProperty()
  @IsString()
  @Matches(RUN_ID_PATTERN, { message: 'runId must be a run id' })
  runId!: string;
}

/** POST /v1/runs:complete: up to 100 completions in one transaction. */
export class CompleteManyBody {
  @ApiProperty({ type: () => [CompleteItemBody] })
  @IsArray()
  @ArrayNotEmpty()
  @ArrayMaxSize(100)
  @ValidateNested({ each: true })
  @Type(() => CompleteItemBody)
  completions!: CompleteItemBody[];

  /** The worker's next runs, leased in the same transaction and sent in the answer (no waiting). */
  @ApiPropertyOptional({ type: () => LeaseNextBody })
  @IsOptional()
  @ValidateNested()
  @Type(() => LeaseNextBody)
  lease?: LeaseNextBody;
}
