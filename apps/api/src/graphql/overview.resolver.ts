import { Inject } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { Args, Int, Query, Resolver } from '@nestjs/graphql';
import { GetQueueStats, type QueueStats } from '@chronicle/commands';
import { requireReader, type Caller } from '@chronicle/domain';
import { CLOCK, type Clock } from '@chronicle/platform';
import { scheduleFireTimes } from '../jobs/job-requests';
import { GqlCaller } from './graphql-context';
import { ScheduleInput, scheduleOf } from './job.types';
import { QueueStatsNode } from './run.types';
import { DateTimeScalar } from './scalars';

/** What the dashboard's overview reads: the queues' counts, and schedules' previews. */
@Resolver()
export class OverviewResolver {
  constructor(
    private readonly queries: QueryBus,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  @Query(() => [QueueStatsNode], { description: "Per queue and priority, of the team's runs (the admin: all)." })
  async queues(@GqlCaller() caller: Caller): Promise<QueueStatsNode[]> {
    const stats: QueueStats[] = await this.queries.execute(new GetQueueStats(requireReader(caller)));
    // A rate's burst is its limit unless it says.
    return stats.map((s) => ({
      ...s,
      rateLimit: s.rateLimit === null ? null : { ...s.rateLimit, burst: s.rateLimit.burst ?? s.rateLimit.limit },
    }));
  }

  @Query(() => [DateTimeScalar], { description: 'POST /v1/schedules:preview: nominal fire times, in UTC.' })
  schedulePreview(
    @GqlCaller() caller: Caller,
    @Args('schedule', { type: () => ScheduleInput }) schedule: ScheduleInput,
    @Args('after', { type: () => DateTimeScalar, nullable: true }) after: Date | null | undefined,
    @Args('count', { type: () => Int, nullable: true }) count: number | null | undefined,
  ): string[] {
    return scheduleFireTimes(caller, scheduleOf(schedule), after ?? undefined, count, this.clock.now());
  }
}
