import { Body, Controller, HttpCode, Inject, Post, UseGuards } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsISO8601, IsInt, IsObject, IsOptional, Max, Min } from 'class-validator';
import type { Caller } from '@chronicle/domain';
import { type Clock, CLOCK } from '@chronicle/platform';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { scheduleFireTimes } from '../jobs/job-requests';

class PreviewBody {
  @ApiProperty()
  @IsObject()
  schedule!: Record<string, unknown>;

  @ApiPropertyOptional()
  @IsOptional()
  @IsISO8601({ strict: true, strictSeparator: true })
  after?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100)
  count?: number;
}

@Controller('v1')
@UseGuards(AuthGuard)
export class SchedulesController {
  constructor(@Inject(CLOCK) private readonly clock: Clock) {}

  /** POST /v1/schedules:preview: the next fire times of a schedule, nominal (no jitter), in UTC. */
  @Post('schedules\\:preview')
  @HttpCode(200)
  preview(@CurrentCaller() caller: Caller, @Body() body: PreviewBody): { fireTimes: string[] } {
    const after = body.after === undefined ? undefined : new Date(body.after);
    return { fireTimes: scheduleFireTimes(caller, body.schedule, after, body.count, this.clock.now()) };
  }
}
