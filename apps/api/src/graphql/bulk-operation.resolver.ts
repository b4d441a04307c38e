import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { Args, ArgsType, Field, ID, InputType, Int, Mutation, ObjectType, Query, Resolver } from '@nestjs/graphql';
import {
  ChangeBulkOperation,
  GetBulkOperation,
  ListBulkOperations,
  PreviewBulkOperation,
  StartBulkOperation,
} from '@chronicle/commands';
import {
  BULK_ACTIONS,
  BULK_STATUSES,
  CANCELLABLE_STATES,
  requireReader,
  type BulkAction,
  type Caller,
} from '@chronicle/domain';
import {
  bulkFilterOf,
  bulkOperationView,
  bulkSampleView,
  type BulkOperationView,
  type BulkSampleView,
} from '../bulk/bulk-dto';
import { oneOf, text } from '../http/body-schema';
import { GRAPHQL_PAGE } from '../http/page-names';
import { ConnectionOf, connectionOf, type Connection } from './connection.types';
import { argumentsCheck, argumentsOf, NAME_FILTER, TEAM_FILTER } from './filter-fields';
import { GqlCaller } from './graphql-context';
import { PageArgs } from './run.types';
import { DateTimeScalar, JsonScalar } from './scalars';

@ObjectType('BulkOperation', { description: 'A bulk operation and its progress (GET /v1/bulk-operations/{id}).' })
export class BulkOperationNode {
  @Field(() => ID) id!: string;
  @Field({ description: BULK_ACTIONS.join(', ') }) action!: string;
  @Field(() => String, { nullable: true, description: "The team acted on; null: the admin's, over every team." })
  team!: string | null;
  @Field({ description: 'Who started it: the actor of the events it causes.' }) actor!: string;
  @Field(() => JsonScalar, { description: 'The filter, as given.' }) filter!: unknown;
  @Field(() => DateTimeScalar, { description: 'Its selection is what matched at this instant.' }) snapshotAt!: string;
  @Field(() => Int) matched!: number;
  @Field(() => Int) processed!: number;
  @Field(() => Int) acted!: number;
  @Field(() => Int) skipped!: number;
  @Field({ description: BULK_STATUSES.join(', ') }) status!: string;
  @Field(() => String, { nullable: true }) error!: string | null;
  @Field(() => DateTimeScalar) createdAt!: string;
  @Field(() => DateTimeScalar) updatedAt!: string;
  @Field(() => DateTimeScalar, { nullable: true }) finishedAt!: string | null;
}

@ObjectType()
export class BulkOperationConnection extends ConnectionOf(BulkOperationNode, 'BulkOperation') {}

@ObjectType('BulkSampleItem', { description: 'One of the first runs or jobs a filter selects.' })
export class BulkSampleNode {
  @Field({ description: 'A run id, or a job name.' }) id!: string;
  @Field() job!: string;
  @Field() team!: string;
  @Field() queue!: string;
  @Field({ description: "A run's state, or a job's: active or paused." }) state!: string;
  @Field(() => DateTimeScalar, { nullable: true }) dueAt!: string | null;
  @Field(() => DateTimeScalar, { nullable: true }) deadAt!: string | null;
  @Field(() => String, { nullable: true }) lastError!: string | null;
}

@ObjectType('BulkOperationPreview', { description: 'A dry run: how many a filter selects now, and the first 10.' })
export class BulkPreviewNode {
  @Field() action!: string;
  @Field(() => Int) matched!: number;
  @Field(() => [BulkSampleNode]) sample!: BulkSampleView[];
}

@InputType({ description: 'Which runs or jobs (as POST /v1/bulk-operations): each field given narrows them.' })
export class BulkFilterInput {
  @Field({ nullable: true }) team?: string;
  @Field({ nullable: true }) job?: string;
  @Field({ nullable: true }) queue?: string;
  @Field({ nullable: true, description: `cancel-runs: ${CANCELLABLE_STATES.join(', ')}` }) state?: string;
  @Field({ nullable: true, description: 'The last error contains this text (any case).' }) error?: string;
  @Field(() => DateTimeScalar, { nullable: true }) dueAfter?: Date;
  @Field(() => DateTimeScalar, { nullable: true }) dueBefore?: Date;
  @Field(() => DateTimeScalar, { nullable: true }) deadAfter?: Date;
  @Field(() => DateTimeScalar, { nullable: true }) deadBefore?: Date;
}

@ArgsType()
class BulkOperationArgs {
  @Field({ description: BULK_ACTIONS.join(', ') }) action!: string;
  @Field(() => BulkFilterInput, { nullable: true }) filter?: BulkFilterInput;
}

@ArgsType()
class BulkOperationsArgs extends PageArgs {
  @Field({ nullable: true }) team?: string;
  @Field({ nullable: true, description: BULK_STATUSES.join(', ') }) status?: string;
}

/** REST's rules for the fields GraphQL's types leave open (names, the action, the state). */
const checkOperationArgs = argumentsCheck({
  action: oneOf(BULK_ACTIONS),
  filter: argumentsOf({
    team: TEAM_FILTER,
    job: NAME_FILTER,
    queue: NAME_FILTER,
    state: oneOf(CANCELLABLE_STATES),
    error: text({ minLength: 1, maxLength: 500 }),
  }),
});
const checkListArgs = argumentsCheck({ team: TEAM_FILTER, status: oneOf(BULK_STATUSES) });

/** Bulk operations, as REST's /v1/bulk-operations: the same commands, so the same events and actors. */
@Resolver(() => BulkOperationNode)
export class BulkOperationResolver {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @Query(() => BulkPreviewNode, { description: 'The dry run of startBulkOperation: nothing is acted on or recorded.' })
  async bulkOperationPreview(@GqlCaller() caller: Caller, @Args() args: BulkOperationArgs): Promise<BulkPreviewNode> {
    checkOperationArgs(args);
    const action = args.action as BulkAction;
    const { matched, sample } = await this.queries.execute(
      new PreviewBulkOperation(requireReader(caller), action, filterOf(args.filter)),
    );
    return { action, matched, sample: sample.map(bulkSampleView) };
  }

  @Query(() => BulkOperationNode, { nullable: true, description: 'As GET /v1/bulk-operations/{id}.' })
  async bulkOperation(
    @GqlCaller() caller: Caller,
    @Args('id', { type: () => ID }) id: string,
  ): Promise<BulkOperationView> {
    return bulkOperationView(await this.queries.execute(new GetBulkOperation(requireReader(caller), id)));
  }

  @Query(() => BulkOperationConnection, { description: "Newest first: a team's own, the admin's every team's." })
  async bulkOperations(
    @GqlCaller() caller: Caller,
    @Args() args: BulkOperationsArgs,
  ): Promise<Connection<BulkOperationView>> {
    checkListArgs(args);
    const page = await this.queries.execute(
      new ListBulkOperations(
        requireReader(caller),
        {
          team: args.team ?? undefined,
          status: (args.status ?? undefined) as (typeof BULK_STATUSES)[number] | undefined,
        },
        { after: args.after, size: args.first, names: GRAPHQL_PAGE },
      ),
    );
    return connectionOf(page, bulkOperationView);
  }

  @Mutation(() => BulkOperationNode, {
    description: 'POST /v1/bulk-operations: started, run in the background in batches; query it for its progress.',
  })
  async startBulkOperation(@GqlCaller() caller: Caller, @Args() args: BulkOperationArgs): Promise<BulkOperationView> {
    checkOperationArgs(args);
    return bulkOperationView(
      await this.commands.execute(
        new StartBulkOperation(requireReader(caller), args.action as BulkAction, filterOf(args.filter)),
      ),
    );
  }

  @Mutation(() => BulkOperationNode, { description: 'POST /v1/bulk-operations/{id}:stop' })
  async stopBulkOperation(
    @GqlCaller() caller: Caller,
    @Args('id', { type: () => ID }) id: string,
  ): Promise<BulkOperationView> {
    return bulkOperationView(await this.commands.execute(new ChangeBulkOperation(requireReader(caller), id, 'stop')));
  }

  @Mutation(() => BulkOperationNode, { description: 'POST /v1/bulk-operations/{id}:resume' })
  async resumeBulkOperation(
    @GqlCaller() caller: Caller,
    @Args('id', { type: () => ID }) id: string,
  ): Promise<BulkOperationView> {
    return bulkOperationView(await this.commands.execute(new ChangeBulkOperation(requireReader(caller), id, 'resume')));
  }
}

/** The input as REST's filter: instants as ISO 8601, fields not given left out. */
function filterOf(input: BulkFilterInput | null | undefined): ReturnType<typeof bulkFilterOf> {
  const iso = (date: Date | null | undefined): string | undefined => date?.toISOString();
  return bulkFilterOf({
    team: input?.team,
    job: input?.job,
    queue: input?.queue,
    state: input?.state as (typeof CANCELLABLE_STATES)[number] | undefined,
    error: input?.error,
    dueAfter: iso(input?.dueAfter),
    dueBefore: iso(input?.dueBefore),
    deadAfter: iso(input?.deadAfter),
    deadBefore: iso(input?.deadBefore),
  });
}
