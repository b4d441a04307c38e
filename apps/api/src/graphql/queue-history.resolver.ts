import { QueryBus } from '@nestjs/cqrs';
import { Args, Field, Float, Int, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { QueueHistory, QUEUE_HISTORY_MAX_MINUTES, type QueueHistoryPoint } from '@chronicle/commands';
import { requireReader, type Caller } from '@chronicle/domain';
import { GqlCaller } from './graphql-context';
import { DateTimeScalar } from './scalars';

@ObjectType('QueueHistoryPoint', {
  description: 'One minute of one priority: what happened to the runs, from the run-activity read model.',
})
export class QueueHistoryPointNode {
  @Field(() => DateTimeScalar, { description: "The minute's start (UTC)." }) minute!: Date;
  @Field({ description: 'critical, default or bulk' }) priority!: string;
  @Field(() => Int, { description: 'RunLeased events' }) leased!: number;
  @Field(() => Int, { description: 'RunSucceeded events' }) succeeded!: number;
  @Field(() => Int, { description: 'RunFailed events' }) failed!: number;
  @Field(() => Int, { description: 'LeaseExpired events' }) leaseExpired!: number;
  @Field(() => Int, { description: 'RunDead events: new dead runs' }) dead!: number;
  @Field(() => Float, {
    nullable: true,
    description: "Median schedule lag (lease time minus due time) of the minute's first leases; null without any.",
  })
  lagP50Seconds!: number | null;
  @Field(() => Float, { nullable: true, description: '99th percentile of the same.' })
  lagP99Seconds!: number | null;
}

/** The dashboard's charts: the last minutes of run activity per priority. */
@Resolver()
export class QueueHistoryResolver {
  constructor(private readonly queries: QueryBus) {}

  @Query(() => [QueueHistoryPointNode], {
    description: `Per minute and priority, oldest first, the last \`minutes\` (60 unless given, at most ${QUEUE_HISTORY_MAX_MINUTES}) of the team's runs (the admin: every team's), optionally of one queue. Minutes without activity are left out.`,
  })
  queueHistory(
    @GqlCaller() caller: Caller,
    @Args('queue', { type: () => String, nullable: true }) queue: string | null | undefined,
    @Args('minutes', { type: () => Int, nullable: true }) minutes: number | null | undefined,
  ): Promise<QueueHistoryPoint[]> {
    return this.queries.execute(new QueueHistory(requireReader(caller), queue ?? undefined, minutes ?? undefined));
  }
}
