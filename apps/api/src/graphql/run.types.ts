import { ArgsType, Field, Float, ID, InputType, Int, ObjectType, registerEnumType } from '@nestjs/graphql';
import { RUN_STATES, visibleState, type PresentRun, type RunState } from '@chronicle/domain';
import type { RecordedEvent } from '@chronicle/event-store';
import { ConnectionOf } from './connection.types';
import { argumentsCheck, argumentsOf, NAME_FILTER, NameFilter, TEAM_FILTER, TeamFilter } from './filter-fields';
import { DateTimeScalar, JsonScalar } from './scalars';

/** The run states (libs/domain/src/run/run-states.ts), the names REST uses, as GraphQL's enum values. */
export const RunStateEnum = Object.fromEntries(RUN_STATES.map((state) => [state, state])) as Record<RunState, RunState>;
registerEnumType(RunStateEnum, {
  name: 'RunState',
  description: 'The states of a run; ready is a scheduled or retry_wait run whose time has come.',
});

@ObjectType({ description: "An event of a run's stream, as the log holds it." })
export class RunEvent {
  @Field({ description: "The run's events as the log holds them, oldest first: RunScheduled, RunLeased, ..." })
  type!: string;

  @Field(() => Int, { description: "The event's revision in the run's stream, from 0." })
  revision!: number;

  @Field(() => DateTimeScalar)
  recordedAt!: Date;

  @Field(() => String, { nullable: true, description: 'Who decided it: team:<id>, worker:<id>, admin, scheduler:...' })
  actor!: string | null;

  @Field(() => JsonScalar, { nullable: true })
  data!: unknown;
}

@ObjectType({ description: 'One attempt of a run, from its events: who ran it, when, and how it ended.' })
export class Attempt {
  @Field(() => Int) attempt!: number;
  @Field(() => String, { nullable: true }) workerId!: string | null;
  @Field(() => DateTimeScalar) startedAt!: string;
  @Field(() => DateTimeScalar, { nullable: true }) endedAt!: string | null;
  @Field({ description: 'success, failure, lease_expired or running' }) outcome!: string;
  @Field(() => String, { nullable: true }) error!: string | null;
}

@ObjectType('Run', { description: 'A run of a job, from the runs read model.' })
export class RunNode {
  @Field(() => ID) id!: string;
  @Field() job!: string;
  @Field() team!: string;
  @Field() queue!: string;
  @Field({ description: 'critical, default or bulk' }) priority!: string;
  @Field(() => RunStateEnum) state!: RunState;
  @Field(() => Int, { description: 'Attempts started so far.' }) attempt!: number;
  @Field(() => DateTimeScalar, { description: 'The time it was made for.' }) dueAt!: string;
  @Field(() => DateTimeScalar, {
    description: 'When it is ready to lease, while it waits: dueAt, later after a debounce or while a retry waits.',
  })
  availableAt!: string;
  @Field() idempotencyKey!: string;
  @Field(() => Int, { nullable: true, description: "The job definition's version it was made from." })
  jobVersion!: number | null;
  @Field({ description: 'Made from a job in dry run: its worker has no effects.' }) dryRun!: boolean;
  @Field(() => String, { nullable: true, description: "The unique key it was enqueued with (its job's unique rule)." })
  uniqueKey!: string | null;
  @Field(() => String, {
    nullable: true,
    description: "The concurrency key it was enqueued with (its job's perKeyConcurrency).",
  })
  concurrencyKey!: string | null;
  @Field(() => String, {
    nullable: true,
    description:
      "The ordering key it was enqueued with: its job's runs of this key are leased one at a time, in orderingSeq order.",
  })
  orderingKey!: string | null;
  @Field(() => Float, {
    nullable: true,
    description: "Its place in its ordering key's order, given when it was enqueued (lower first).",
  })
  orderingSeq!: number | null;
  @Field(() => String, {
    nullable: true,
    description: "The debounce key it was enqueued with (its job's debounce moves it while it waits).",
  })
  debounceKey!: string | null;
  @Field(() => DateTimeScalar, { nullable: true }) leaseExpiresAt!: string | null;
  @Field(() => String, { nullable: true }) lastError!: string | null;
  @Field(() => DateTimeScalar, { nullable: true, description: 'When it went to the dead-letter queue.' })
  deadAt!: string | null;
  /** The run's definition, for the fields resolved from it (payload); not in the schema. */
  definition!: PresentRun['definition'];
}

export function runNode(run: PresentRun, now: Date): RunNode {
  return {
    id: run.definition.runId,
    job: run.definition.job,
    team: run.definition.team,
    queue: run.definition.queue,
    priority: run.definition.priority,
    state: visibleState(run, now),
    attempt: run.attempt,
    dueAt: run.definition.dueAt,
    availableAt: run.availableAt,
    idempotencyKey: run.definition.idempotencyKey,
    jobVersion: run.definition.jobVersion,
    dryRun: run.definition.dryRun === true,
    uniqueKey: run.definition.unique?.key ?? null,
    concurrencyKey: run.definition.concurrencyKey ?? null,
    orderingKey: run.definition.ordering?.key ?? null,
    orderingSeq: run.definition.ordering?.seq ?? null,
    debounceKey: run.definition.debounceKey ?? null,
    leaseExpiresAt: run.lease?.expiresAt ?? null,
    lastError: run.lastError,
    deadAt: run.status === 'dead' ? (run.death?.deadAt ?? null) : null,
    definition: run.definition,
  };
}

export function runEvent(event: RecordedEvent): RunEvent {
  const actor = event.metadata['actor'];
  return {
    type: event.type,
    revision: Number(event.revision),
    recordedAt: event.recordedAt,
    actor: typeof actor === 'string' ? actor : null,
    data: event.data,
  };
}

@ObjectType()
export class RunConnection extends ConnectionOf(RunNode, 'Run') {}

@InputType({ description: 'Each field given narrows the runs listed (as GET /v1/runs).' })
export class RunFilter {
  @NameFilter()
  job?: string;

  @NameFilter()
  queue?: string;

  @TeamFilter()
  team?: string;

  @Field(() => RunStateEnum, { nullable: true })
  state?: RunState;

  @Field(() => DateTimeScalar, { nullable: true, description: 'Runs due at or after this instant.' })
  dueAfter?: Date;

  @Field(() => DateTimeScalar, { nullable: true, description: 'Runs due strictly before this instant.' })
  dueBefore?: Date;
}

/** The page's size and cursor: the listing's query checks them (`first must be a whole number from 1 to 500`). */
@ArgsType()
export class PageArgs {
  @Field(() => Int, { nullable: true, description: 'At most 500; 50 unless given.' })
  first?: number;

  @Field(() => String, { nullable: true, description: 'The endCursor of the previous page.' })
  after?: string;
}

@ArgsType()
export class RunsArgs extends PageArgs {
  @Field(() => RunFilter, { nullable: true })
  filter?: RunFilter;
}

export const checkRunsArgs = argumentsCheck({
  filter: argumentsOf({ job: NAME_FILTER, queue: NAME_FILTER, team: TEAM_FILTER }),
});

@ArgsType()
export class DeadLettersArgs extends PageArgs {
  @NameFilter()
  job?: string;
}

export const checkDeadLettersArgs = argumentsCheck({ job: NAME_FILTER });

@ObjectType('RateLimit', { description: 'A token bucket: at most `limit` runs leased per `per`, `burst` at once.' })
export class RateLimitNode {
  @Field(() => Int) limit!: number;
  @Field({ description: 'second, minute, hour or day' }) per!: string;
  @Field(() => Int, { description: 'The bucket size: the limit unless set.' }) burst!: number;
}

@ObjectType('QueueStats', { description: 'The runs of one queue and priority that are waiting, running or dead.' })
export class QueueStatsNode {
  @Field() queue!: string;
  @Field() priority!: string;
  @Field(() => Int) ready!: number;
  @Field(() => Int) leased!: number;
  @Field(() => Int) retryWait!: number;
  @Field(() => Int, { description: 'Dead and not discarded: the dead-letter queue.' }) dead!: number;
  @Field(() => Float, { nullable: true, description: 'Since the oldest ready run became ready.' })
  oldestReadyAgeSeconds!: number | null;
  @Field(() => Int, {
    nullable: true,
    description: "The queue's cap on its leased runs, every team's and priority's together; null: none.",
  })
  concurrencyLimit!: number | null;
  @Field(() => RateLimitNode, {
    nullable: true,
    description: "The queue's rate of leased runs, every team's and priority's together; null: none.",
  })
  rateLimit!: RateLimitNode | null;
}
