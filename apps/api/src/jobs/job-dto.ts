import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
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
import { NAME_PATTERN, NAME_RULE, PRIORITIES } from '@chronicle/domain';

export class RetryBody {
  @ApiProperty()
  @IsInt()
  @Min(1)
  @Max(100)
  maxAttempts!: number;

  @ApiProperty()
  @IsInt()
  @Min(0)
  @Max(86_400)
  baseSeconds!: number;

  @ApiProperty()
  @IsInt()
  @Min(0)
  @Max(604_800)
  maxSeconds!: number;
}

/** PUT /v1/jobs/{name}: reference 4.2, the name comes from the path. */
export class JobBody {
  @ApiProperty()
  @IsString()
  @Matches(NAME_PATTERN, { message: `queue must be ${NAME_RULE}` })
  queue!: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsIn(PRIORITIES)
  priority?: 'critical' | 'default' | 'bulk';

  @ApiPropertyOptional()
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(21_600)
  timeoutSeconds?: number;

  @ApiPropertyOptional({ type: () => RetryBody })
  @IsOptional()
  @ValidateNested()
  @Type(() => RetryBody)
  @IsObject()
  retry?: RetryBody;

  @ApiPropertyOptional()
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(10_000)
  concurrency?: number;

  @ApiPropertyOptional()
  @IsOptional()
  @IsDefined()
  payload?: unknown;

  @ApiPropertyOptional()
  @IsOptional()
  @IsObject()
  schedule?: Record<string, unknown>;
}
