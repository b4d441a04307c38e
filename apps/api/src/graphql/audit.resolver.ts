import { QueryBus } from '@nestjs/cqrs';
import { Args, ArgsType, Field, InputType, Int, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { ListAuditEvents } from '@chronicle/commands';
import { requireReader, type Caller } from '@chronicle/domain';
import { AUDIT_FILTERS, auditEventView } from '../audit/audit.controller';
import { GRAPHQL_PAGE } from '../http/page-names';
import { ConnectionOf, connectionOf, givenFields, type Connection } from './connection.types';
import { argumentsCheck, argumentsOf, TeamFilter } from './filter-fields';
import { GqlCaller } from './graphql-context';
import { PageArgs } from './run.types';
import { DateTimeScalar, JsonScalar } from './scalars';

@ObjectType('AuditEvent', { description: 'An event of the log, with who decided it (GET /v1/audit).' })
export class AuditEventNode {
  @Field() streamId!: string;
  @Field(() => Int) revision!: number;
  @Field() type!: string;
  @Field(() => DateTimeScalar) recordedAt!: string;
  @Field(() => String, { nullable: true, description: 'team:<id>:token:<token id>, worker:<team>:<worker id>, …' })
  actor!: string | null;
  @Field(() => String, { nullable: true, description: 'The id of the request that caused it, if one did.' })
  correlationId!: string | null;
  @Field(() => String, { nullable: true, description: "The team whose stream it is; null: the platform's." })
  team!: string | null;
  @Field(() => JsonScalar) data!: unknown;
  @Field(() => JsonScalar) metadata!: Record<string, unknown>;
}

@ObjectType()
export class AuditEventConnection extends ConnectionOf(AuditEventNode, 'AuditEvent') {}

@InputType({ description: 'Each field given narrows the events listed (as GET /v1/audit).' })
export class AuditFilterInput {
  @Field({ nullable: true })
  actor?: string;

  @Field({ nullable: true })
  type?: string;

  @Field({ nullable: true, description: 'run-<id>, job-<name>, team-<id>' })
  stream?: string;

  @Field(() => DateTimeScalar, { nullable: true, description: 'recorded at or after' })
  since?: Date;

  @Field(() => DateTimeScalar, { nullable: true, description: 'recorded before' })
  until?: Date;

  @TeamFilter()
  team?: string;
}

@ArgsType()
class AuditEventsArgs extends PageArgs {
  @Field(() => AuditFilterInput, { nullable: true })
  filter?: AuditFilterInput;
}

/** REST's rules for its query parameters (GET /v1/audit). */
const checkAuditEventsArgs = argumentsCheck({ filter: argumentsOf(AUDIT_FILTERS) });

/** The audit trail, as REST's GET /v1/audit: the same query, so the same answers. */
@Resolver()
export class AuditResolver {
  constructor(private readonly queries: QueryBus) {}

  @Query(() => AuditEventConnection, {
    description: "The log's events with their actors, newest first (a team: its own streams'; the admin: all).",
  })
  async auditEvents(@GqlCaller() caller: Caller, @Args() args: AuditEventsArgs): Promise<Connection<AuditEventNode>> {
    checkAuditEventsArgs(args);
    const page = await this.queries.execute(
      new ListAuditEvents(requireReader(caller), givenFields(args.filter), {
        after: args.after,
        size: args.first,
        names: GRAPHQL_PAGE,
      }),
    );
    return connectionOf(page, auditEventView);
  }
}
