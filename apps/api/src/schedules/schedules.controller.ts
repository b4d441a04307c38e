import { Body, Controller, HttpCode, Inject, Post, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsISO8601, IsInt, IsObject, IsOptional, Max, Min } from 'class-validator';
import type { Caller } from '@chronicle/domain';
import { type Clock, CLOCK } from '@chronicle/platform';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { ApiAnswer } from '../http/answers';
import { schemaPath } from '../http/named-schemas';
import { ApiProblems } from '../http/problem-responses';
import { FireTimes } from '../jobs/job-answers';
import { scheduleFireTimes } from '../jobs/job-requests';
import { ScheduleBody } from '../jobs/schedule-schemas';

class PreviewBody {
  @ApiProperty({ allOf: [{ $ref: schemaPath(ScheduleBody) }] })
  @IsObject()
  schedule!: Record<string, unknown>;

  @ApiPropertyOptional({ format: 'date-time', description: 'the fire times after this instant; default: now' })
  @IsOptional()
  @IsISO8601({ strict: true, strictSeparator: true })
  after?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100, default: 10 })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100)
  count?: number;
}

@Controller('v1')
@UseGuards(AuthGuard)
@ApiProblems('forbidden') // team tokens only
export class SchedulesController {
  constructor(@Inject(CLOCK) private readonly clock: Clock) {}

  /** POST /v1/schedules:preview: the next fire times of a schedule, nominal (no jitter), in UTC. */
  @Post('schedules\\:preview')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'previewSchedule',
    summary: "A schedule's next fire times, nominal (no jitter), in UTC (team or admin)",
  })
  @ApiAnswer(200, FireTimes, { description: 'its next fire times' })
  @ApiProblems('invalid-schedule')
  preview(@CurrentCaller() caller: Caller, @Body() body: PreviewBody): { fireTimes: string[] } {
    const after = body.after === undefined ? undefined : new Date(body.after);
    return { fireTimes: scheduleFireTimes(caller, body.schedule, after, body.count, this.clock.now()) };
  }
}
