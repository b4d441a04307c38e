import { ArgsType, Field, InputType, Int, ObjectType } from '@nestjs/graphql';
import type { DefinedJob } from '@chronicle/domain';
import { jobView } from '../jobs/job-view';
import { ConnectionOf } from './connection.types';
import { argumentsCheck, NAME_FILTER, NameFilter, TEAM_FILTER, TeamFilter } from './filter-fields';
import { PageArgs } from './run.types';
import { JsonScalar } from './scalars';

@ObjectType('Job', { description: 'A job definition, from the jobs read model (job(name:) reads its stream).' })
export class JobNode {
  @Field() name!: string;
  @Field() team!: string;
  @Field() queue!: string;
  @Field({ description: 'critical, default or bulk' }) priority!: string;
  @Field() paused!: boolean;
  @Field({ description: 'Its runs are leased marked dry: handlers log, with no effects.' }) dryRun!: boolean;
  @Field(() => Int) version!: number;
  @Field(() => Int, {
    nullable: true,
    description: 'Its debounce: runs enqueued with a debounceKey wait this long after the newest enqueue of it.',
  })
  debounceSeconds!: number | null;
  @Field(() => JsonScalar, { description: 'The whole definition, as GET /v1/jobs/{name} shows it.' })
  definition!: unknown;
  @Field({
    nullable: true,
    description:
      "An HTTP-target job's signing secret: in defineJob's answer that made the target, once; null everywhere else.",
  })
  signingSecret?: string;
  /** The job itself, for the fields resolved from it (nextFireTimes, runs); not in the schema. */
  job!: DefinedJob;
}

export function jobNode(job: DefinedJob): JobNode {
  const { definition } = job;
  return {
    name: definition.name,
    team: definition.team,
    queue: definition.queue,
    priority: definition.priority,
    paused: job.paused,
    dryRun: definition.dryRun === true,
    version: job.version,
    debounceSeconds: definition.debounce?.seconds ?? null,
    definition: jobView(job),
    job,
  };
}

@ObjectType('SigningSecret', { description: "An HTTP-target job's new signing secret (rotateSigningSecret)." })
export class SigningSecretNode {
  @Field({ description: 'shown this once' }) secret!: string;
  @Field({ description: 'until when the secret it replaced still signs the calls' }) previousValidUntil!: string;
}

@ObjectType()
export class JobConnection extends ConnectionOf(JobNode, 'Job') {}

@ArgsType()
export class JobsArgs extends PageArgs {
  @NameFilter()
  queue?: string;

  @TeamFilter()
  team?: string;
}

export const checkJobsArgs = argumentsCheck({ queue: NAME_FILTER, team: TEAM_FILTER });

/* A schedule's fields are the domain's to check, as REST's are (invalid-schedule): GraphQL's types only. */

@InputType({ description: 'What happens at a DST change: a wall time that does not exist, or that happens twice.' })
export class DstPolicyInput {
  @Field({ nullable: true, description: 'shift (default) or skip' })
  gap?: string;

  @Field({ nullable: true, description: 'first (default), last or both' })
  overlap?: string;
}

@InputType({ description: "The fields of a job's schedule: one of cron or rrule, and the policies." })
export class ScheduleInput {
  @Field({ nullable: true }) cron?: string;
  @Field({ nullable: true }) rrule?: string;
  @Field({ nullable: true, description: 'An IANA zone, like Europe/Berlin' }) timeZone?: string;
  @Field(() => Int, { nullable: true }) jitterSeconds?: number;
  @Field({ nullable: true, description: 'run_once (default), run_all or skip' }) missedRunPolicy?: string;

  @Field(() => DstPolicyInput, { nullable: true })
  dstPolicy?: DstPolicyInput;

  @Field({ nullable: true, description: 'buffer_one (default), buffer_all, skip, cancel_other or allow_all' })
  overlapPolicy?: string;
}

/** A ScheduleInput as the plain object a job's `schedule` is: the fields given, nulls left out. */
export function scheduleOf(input: ScheduleInput): Record<string, unknown> {
  const plain = (value: object): Record<string, unknown> =>
    Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== null && v !== undefined)
        .map(([k, v]) => [k, typeof v === 'object' ? plain(v as object) : v]),
    );
  return plain(input);
}
