import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsDefined,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  ValidateNested,
} from 'class-validator';
import { JOB_DEFAULTS, NAME_PATTERN, NAME_RULE, PRIORITIES } from '@chronicle/domain';
import { schemaPath } from '../http/named-schemas';
import { Payload } from '../runs/run-answers';
import { ScheduleBody } from './schedule-schemas';

/** A path into a payload, as the secret scanner names them: `$`, then `.name` or `[index]` steps. */
const SECRET_PATH = /^\$(?:\.[A-Za-z_][A-Za-z0-9_-]*|\[\d{1,6}\]){1,32}$/;

export class RetryBody {
  @ApiProperty({ type: 'integer', minimum: 1, maximum: 100, description: 'attempts in all, the first included' })
  @IsInt()
  @Min(1)
  @Max(100)
  maxAttempts!: number;

  @ApiProperty({ type: 'integer', minimum: 0, maximum: 86_400 })
  @IsInt()
  @Min(0)
  @Max(86_400)
  baseSeconds!: number;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    maximum: 604_800,
    description: 'full-jitter backoff: rand(0, min(maxSeconds, baseSeconds * 2^(n-1)))',
  })
  @IsInt()
  @Min(0)
  @Max(604_800)
  maxSeconds!: number;
}

/** PUT /v1/jobs/{name}: reference 4.2, the name comes from the path. */
export class JobBody {
  @ApiProperty({ pattern: NAME_PATTERN.source, description: `a queue the token was granted: ${NAME_RULE}` })
  @IsString()
  @Matches(NAME_PATTERN, { message: `queue must be ${NAME_RULE}` })
  queue!: string;

  @ApiPropertyOptional({ enum: PRIORITIES, default: JOB_DEFAULTS.priority })
  @IsOptional()
  @IsIn(PRIORITIES)
  priority?: 'critical' | 'default' | 'bulk';

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 21_600,
    default: JOB_DEFAULTS.timeoutSeconds,
    description: 'a lease and its heartbeats never reach past this',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(21_600)
  timeoutSeconds?: number;

  @ApiPropertyOptional({ type: () => RetryBody, default: JOB_DEFAULTS.retry })
  @IsOptional()
  @ValidateNested()
  @Type(() => RetryBody)
  @IsObject()
  retry?: RetryBody;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 10_000,
    description: 'at most this many of its runs leased at once; none: no limit',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(10_000)
  concurrency?: number;

  @ApiPropertyOptional({ allOf: [{ $ref: schemaPath(Payload) }], description: 'what each run gets; default null' })
  @IsOptional()
  @IsDefined()
  payload?: unknown;

  @ApiPropertyOptional({
    type: [String],
    maxItems: 50,
    example: ['$.sftp.hostKey'],
    description:
      'paths of its payloads the secret scanner lets through (false positives): a path and everything under it',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(50)
  @Matches(SECRET_PATH, {
    each: true,
    message: 'each of secretsAllowed must be a path such as $.sftp.hostKey or $.hosts[0]',
  })
  secretsAllowed?: string[];

  @ApiPropertyOptional({
    default: false,
    description:
      "reference 11.2's dry run: runs are scheduled and leased as usual, marked dry (`dryRun` in the lease and the run); the handler logs what it would do and has no effects",
  })
  @IsOptional()
  @IsBoolean()
  dryRun?: boolean;

  @ApiPropertyOptional({ allOf: [{ $ref: schemaPath(ScheduleBody) }], description: 'none: runs are enqueued only' })
  @IsOptional()
  @IsObject()
  schedule?: Record<string, unknown>;
}
