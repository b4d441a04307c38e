import { ArrayMaxSize, ArrayNotEmpty, IsArray, IsBoolean, IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { NAME_PATTERN } from '../names';

export class LeaseBody {
  @IsArray() @ArrayNotEmpty() @ArrayMaxSize(50) @IsString({ each: true }) @Matches(NAME_PATTERN, { each: true, message: 'each queue must be a queue name' })
  queues!: string[];

  @IsInt() @Min(1) @Max(100)
  max!: number;

  @IsOptional() @IsInt() @Min(0) @Max(30)
  waitSeconds?: number;

  @IsOptional() @IsInt() @Min(1) @Max(3600)
  leaseSeconds?: number;

  @IsOptional() @IsString() @MaxLength(200)
  workerId?: string;
}

export class HeartbeatBody {
  @IsInt() @Min(0)
  fencingToken!: number;

  @IsOptional() @IsInt() @Min(1) @Max(3600)
  leaseSeconds?: number;
}

export class CompleteBody {
  @IsInt() @Min(0)
  fencingToken!: number;

  @IsIn(['success', 'failure'])
  outcome!: 'success' | 'failure';

  @IsOptional() @IsString() @MaxLength(10_000)
  error?: string;

  @IsOptional() @IsBoolean()
  retryable?: boolean;
}
