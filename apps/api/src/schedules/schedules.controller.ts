import { Controller, HttpCode, Inject, Post, UseGuards } from '@nestjs/common';
import { ApiOperation } from '@nestjs/swagger';
import type { Caller } from '@chronicle/domain';
import { type Clock, CLOCK } from '@chronicle/platform';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { ApiAnswer } from '../http/answers';
import { anyObject, dateTime, integer, object, type Accepted } from '../http/body-schema';
import { CompiledBody } from '../http/compiled-body';
import { documentedAs } from '../http/named-schemas';
import { ApiProblems } from '../http/problem-responses';
import { FireTimes } from '../jobs/job-answers';
import { scheduleFireTimes } from '../jobs/job-requests';
import { ScheduleBody } from '../jobs/schedule-schemas';

/** POST /v1/schedules:preview; the schedule is the domain's to check (invalid-schedule), as a job's is. */
const PreviewBody = object(
  {
    required: { schedule: documentedAs(anyObject(), ScheduleBody) },
    optional: {
      after: { ...dateTime(), description: 'the fire times after this instant; default: now' },
      count: { ...integer(1, 100), default: 10 },
    },
  },
  'PreviewBody',
);
type PreviewBody = Accepted<typeof PreviewBody>;

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
  preview(@CurrentCaller() caller: Caller, @CompiledBody(PreviewBody) body: PreviewBody): { fireTimes: string[] } {
    const after = body.after == null ? undefined : new Date(body.after);
    return { fireTimes: scheduleFireTimes(caller, body.schedule, after, body.count, this.clock.now()) };
  }
}
