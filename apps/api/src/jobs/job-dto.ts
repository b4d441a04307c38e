import { Type } from 'class-transformer';
import { IsDefined, IsIn, IsInt, IsObject, IsOptional, IsString, Matches, Max, Min, ValidateNested } from 'class-validator';
import { NAME_PATTERN } from '../names';

export class RetryBody {
  @IsInt() @Min(1) @Max(100)
  maxAttempts!: number;

  @IsInt() @Min(0) @Max(86_400)
  baseSeconds!: number;

  @IsInt() @Min(0) @Max(604_800)
  maxSeconds!: number;
}

/** PUT /v1/jobs/{name}: reference 4.2, the name comes from the path. */
export class JobBody {
  @IsString() @Matches(NAME_PATTERN, { message: 'queue must be a name of 1-200 characters: letters, digits, . _ -' })
  queue!: string;

  @IsOptional() @IsIn(['critical', 'default', 'bulk'])
  priority?: 'critical' | 'default' | 'bulk';

  @IsOptional() @IsInt() @Min(1) @Max(21_600)
  timeoutSeconds?: number;

  @IsOptional() @ValidateNested() @Type(() => RetryBody) @IsObject()
  retry?: RetryBody;

  @IsOptional() @IsInt() @Min(1) @Max(10_000)
  concurrency?: number;

  @IsOptional() @IsDefined()
  payload?: unknown;

  @IsOptional() @IsObject()
  schedule?: Record<string, unknown>;
}
