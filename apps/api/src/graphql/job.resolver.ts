import { Inject } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { Args, Int, Mutation, Parent, Query, ResolveField, Resolver } from '@nestjs/graphql';
import { GetJob, ListJobs } from '@chronicle/commands';
import { parseName, requireReader, type Caller, type RunState } from '@chronicle/domain';
import { CLOCK, type Clock } from '@chronicle/platform';
import { compileBody } from '../http/compiled-body';
import { GRAPHQL_PAGE } from '../http/page-names';
import { JobBody } from '../jobs/job-dto';
import { defineJobCommand, jobFireTimes, rotateSigningSecretCommand, setJobPausedCommand } from '../jobs/job-requests';
import { connectionOf, given, type Connection } from './connection.types';
import { GqlCaller, GqlLoaders, type RequestLoaders } from './graphql-context';
import { checkJobsArgs, JobConnection, JobNode, JobsArgs, jobNode, SigningSecretNode } from './job.types';
import { RunConnection, RunNode, RunStateEnum, runNode } from './run.types';
import { DateTimeScalar, JsonScalar } from './scalars';

/** The same check of a definition as PUT /v1/jobs/{name}'s body; a refusal names its fields as REST's does. */
const checkDefinition = compileBody(JobBody, 'definition');

/** Jobs: the same queries and commands as REST's /v1/jobs, so the same answers, events and actors. */
@Resolver(() => JobNode)
export class JobResolver {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  @Query(() => JobNode, { nullable: true, description: "A job of the caller's team (the admin: any); not-found else." })
  async job(@GqlCaller() caller: Caller, @Args('name') name: string): Promise<JobNode> {
    return jobNode(await this.queries.execute(new GetJob(requireReader(caller), parseName(name, 'job name'))));
  }

  @Query(() => JobConnection, { description: "The team's jobs (the admin: every team's), by name." })
  async jobs(@GqlCaller() caller: Caller, @Args() args: JobsArgs): Promise<Connection<JobNode>> {
    checkJobsArgs(args);
    const page = await this.queries.execute(
      new ListJobs(
        requireReader(caller),
        { team: given(args.team), queue: given(args.queue) },
        { after: args.after, size: args.first, names: GRAPHQL_PAGE },
      ),
    );
    return connectionOf(page, jobNode);
  }

  @ResolveField(() => [DateTimeScalar], { description: 'The next fire times, jitter included (at most 100).' })
  nextFireTimes(
    @Parent() job: JobNode,
    @Args('count', { type: () => Int, nullable: true }) count: number | undefined,
  ): string[] {
    return jobFireTimes(job.job, count, this.clock.now());
  }

  @ResolveField(() => RunConnection, { description: "The job's runs, newest due first." })
  async runs(
    @Parent() job: JobNode,
    @GqlLoaders() loaders: RequestLoaders,
    @Args('first', { type: () => Int, nullable: true }) first: number | undefined,
    @Args('after', { type: () => String, nullable: true }) after: string | undefined,
    @Args('state', { type: () => RunStateEnum, nullable: true }) state: RunState | undefined,
  ): Promise<Connection<RunNode>> {
    const page = await loaders.runsOfJob(state ?? undefined, first ?? undefined, after ?? undefined).load(job.name);
    const now = this.clock.now();
    return connectionOf(page, (run) => runNode(run, now));
  }

  @Mutation(() => JobNode, { description: 'PUT /v1/jobs/{name}: `definition` is its body.' })
  async defineJob(
    @GqlCaller() caller: Caller,
    @Args('name') name: string,
    @Args('definition', { type: () => JsonScalar }) definition: unknown,
  ): Promise<JobNode> {
    const body = checkDefinition(definition);
    const { job, signingSecret } = await this.commands.execute(defineJobCommand(caller, name, body, this.clock.now()));
    return signingSecret === undefined ? jobNode(job) : { ...jobNode(job), signingSecret };
  }

  @Mutation(() => SigningSecretNode, { description: 'POST /v1/jobs/{name}/signing-secret:rotate.' })
  async rotateSigningSecret(
    @GqlCaller() caller: Caller,
    @Args('name') name: string,
    @Args('previousValidSeconds', { type: () => Int, nullable: true }) previousValidSeconds: number | undefined,
  ): Promise<SigningSecretNode> {
    return this.commands.execute(rotateSigningSecretCommand(caller, name, previousValidSeconds));
  }

  @Mutation(() => JobNode)
  async pauseJob(@GqlCaller() caller: Caller, @Args('name') name: string): Promise<JobNode> {
    return jobNode(await this.commands.execute(setJobPausedCommand(caller, name, true)));
  }

  @Mutation(() => JobNode)
  async resumeJob(@GqlCaller() caller: Caller, @Args('name') name: string): Promise<JobNode> {
    return jobNode(await this.commands.execute(setJobPausedCommand(caller, name, false)));
  }
}
