import { Inject } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { Args, ID, Int, Mutation, Parent, Query, ResolveField, Resolver } from '@nestjs/graphql';
import { attemptHistory, GetRun, ListDeadLetters, ListRuns } from '@chronicle/commands';
import { parseRunId, requireReader, type Caller } from '@chronicle/domain';
import { CLOCK, type Clock } from '@chronicle/platform';
import { compileBody } from '../http/compiled-body';
import { GRAPHQL_PAGE } from '../http/page-names';
import { EnqueueBody } from '../runs/run-dto';
import { cancelRunCommand, deadLetterCommand, enqueueOneRun } from '../runs/run-requests';
import { connectionOf, given, givenFields, type Connection } from './connection.types';
import { GqlCaller, GqlLoaders, type RequestLoaders } from './graphql-context';
import {
  Attempt,
  checkDeadLettersArgs,
  checkRunsArgs,
  DeadLettersArgs,
  RunConnection,
  RunEvent,
  RunNode,
  RunsArgs,
  runEvent,
  runNode,
} from './run.types';
import { DateTimeScalar, JsonScalar } from './scalars';

/** The same check of an enqueue's fields as POST /v1/jobs/{name}/runs's body. */
const checkEnqueue = compileBody(EnqueueBody);

/** Runs: the same queries and commands as REST's /v1/runs and /v1/dlq, so the same events and actors. */
@Resolver(() => RunNode)
export class RunResolver {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  @Query(() => RunNode, {
    nullable: true,
    description: 'A run the caller may see (as GET /v1/runs/{id}); not-found else.',
  })
  async run(@GqlCaller() caller: Caller, @Args('id', { type: () => ID }) id: string): Promise<RunNode> {
    return runNode(await this.queries.execute(new GetRun(caller, parseRunId(id))), this.clock.now());
  }

  @Query(() => RunConnection, { description: "The team's runs (the admin: every team's), newest due first." })
  async runs(@GqlCaller() caller: Caller, @Args() args: RunsArgs): Promise<Connection<RunNode>> {
    checkRunsArgs(args);
    const page = await this.queries.execute(
      new ListRuns(requireReader(caller), givenFields(args.filter), {
        after: args.after,
        size: args.first,
        names: GRAPHQL_PAGE,
      }),
    );
    const now = this.clock.now();
    return connectionOf(page, (run) => runNode(run, now));
  }

  @Query(() => RunConnection, { description: 'The dead-letter queue, newest first (as GET /v1/dlq).' })
  async deadLetters(@GqlCaller() caller: Caller, @Args() args: DeadLettersArgs): Promise<Connection<RunNode>> {
    checkDeadLettersArgs(args);
    const page = await this.queries.execute(
      new ListDeadLetters(requireReader(caller), given(args.job), {
        after: args.after,
        size: args.first,
        names: GRAPHQL_PAGE,
      }),
    );
    const now = this.clock.now();
    return connectionOf(page, (run) => runNode(run, now));
  }

  @ResolveField(() => [RunEvent], { description: "The run's whole history from the log, with each event's actor." })
  async events(@Parent() run: RunNode, @GqlLoaders() loaders: RequestLoaders): Promise<RunEvent[]> {
    return (await loaders.events.load(run.id)).map(runEvent);
  }

  @ResolveField(() => JsonScalar, {
    nullable: true,
    description: 'As it was given (one over 4 KB read from the payload store, for a page of runs at once).',
  })
  async payload(@Parent() run: RunNode, @GqlLoaders() loaders: RequestLoaders): Promise<unknown> {
    const { payloadRef } = run.definition;
    return payloadRef === undefined ? run.definition.payload : loaders.payloads.load(payloadRef.sha256);
  }

  @ResolveField(() => [Attempt], { description: 'Each attempt, from the events.' })
  async attempts(@Parent() run: RunNode, @GqlLoaders() loaders: RequestLoaders): Promise<Attempt[]> {
    return attemptHistory(await loaders.events.load(run.id));
  }

  @Mutation(() => RunNode, { description: 'POST /v1/jobs/{name}/runs: now, at runAt or after delaySeconds.' })
  async enqueueRun(
    @GqlCaller() caller: Caller,
    @Args('job') job: string,
    @Args('payload', { type: () => JsonScalar, nullable: true }) payload: unknown,
    @Args('runAt', { type: () => DateTimeScalar, nullable: true }) runAt: Date | null | undefined,
    @Args('delaySeconds', { type: () => Int, nullable: true }) delaySeconds: number | null | undefined,
    @Args('idempotencyKey', { type: () => String, nullable: true }) idempotencyKey: string | null | undefined,
    @Args('uniqueKey', { type: () => String, nullable: true }) uniqueKey: string | null | undefined,
    @Args('ifDuplicate', {
      type: () => String,
      nullable: true,
      description: 'existing (default): the run that holds uniqueKey; reject: a duplicate-run error naming it',
    })
    ifDuplicate: string | null | undefined,
    @Args('concurrencyKey', {
      type: () => String,
      nullable: true,
      description: "leased only while fewer than the job's perKeyConcurrency runs of this key are leased",
    })
    concurrencyKey: string | null | undefined,
    @Args('orderingKey', {
      type: () => String,
      nullable: true,
      description: "the job's runs with this key are leased one at a time, in the order they were enqueued",
    })
    orderingKey: string | null | undefined,
    @Args('debounceKey', {
      type: () => String,
      nullable: true,
      description: "for a job with a debounce: moves the key's waiting run (RunDebounced) instead of making another",
    })
    debounceKey: string | null | undefined,
  ): Promise<RunNode> {
    const body = checkEnqueue({
      ...(payload === undefined ? {} : { payload }),
      ...(runAt == null ? {} : { runAt: runAt.toISOString() }),
      ...(delaySeconds == null ? {} : { delaySeconds }),
      ...(uniqueKey == null ? {} : { uniqueKey }),
      ...(ifDuplicate == null ? {} : { ifDuplicate }),
      ...(concurrencyKey == null ? {} : { concurrencyKey }),
      ...(orderingKey == null ? {} : { orderingKey }),
      ...(debounceKey == null ? {} : { debounceKey }),
    });
    const now = this.clock.now();
    const { run } = await enqueueOneRun(
      { commands: this.commands, queries: this.queries },
      caller,
      job,
      body,
      idempotencyKey ?? undefined,
      now,
    );
    return runNode(run, now);
  }

  @Mutation(() => RunNode, { description: 'POST /v1/runs/{id}:cancel' })
  async cancelRun(@GqlCaller() caller: Caller, @Args('id', { type: () => ID }) id: string): Promise<RunNode> {
    return runNode(await this.commands.execute(cancelRunCommand(caller, id)), this.clock.now());
  }

  @Mutation(() => RunNode, { description: 'POST /v1/dlq/{id}:replay: back to ready with a fresh attempt budget.' })
  async replayDeadLetter(@GqlCaller() caller: Caller, @Args('id', { type: () => ID }) id: string): Promise<RunNode> {
    return runNode(await this.commands.execute(deadLetterCommand(caller, id, 'replay')), this.clock.now());
  }

  @Mutation(() => RunNode, { description: 'POST /v1/dlq/{id}:discard: out of the dead-letter queue, history kept.' })
  async discardDeadLetter(@GqlCaller() caller: Caller, @Args('id', { type: () => ID }) id: string): Promise<RunNode> {
    return runNode(await this.commands.execute(deadLetterCommand(caller, id, 'discard')), this.clock.now());
  }
}
