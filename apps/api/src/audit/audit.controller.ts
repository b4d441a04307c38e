import { Controller, Get, UseGuards } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { ApiOkResponse, ApiOperation, ApiProperty } from '@nestjs/swagger';
import { ListAuditEvents, type AuditEvent } from '@chronicle/commands';
import { requireReader, TEAM_ID_PATTERN, TEAM_ID_RULE, type Caller } from '@chronicle/domain';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { dateTime, queryString, text, type Accepted } from '../http/body-schema';
import { CompiledQuery } from '../http/compiled-body';
import { REST_PAGE } from '../http/page-names';
import { ListingRefusals, PAGE_PARAMETERS } from '../listings/jobs-listing.controller';

/** Event types and stream ids are our own names: letters, digits and a few separators. */
export const LOG_NAME = /^[A-Za-z0-9_.:@+-]{1,300}$/;

/** The filters of the audit trail, REST's query parameters and GraphQL's AuditFilterInput alike. */
export const AUDIT_FILTERS = {
  actor: {
    ...text({ maxLength: 300 }),
    example: 'team:billing',
    description: "who decided: the events' metadata.actor",
  },
  type: { ...text({ pattern: LOG_NAME, rule: 'an event type such as RunDead' }), example: 'RunDead' },
  stream: {
    ...text({ pattern: LOG_NAME, rule: 'a stream id such as run-run_8K2 or job-billing.export' }),
    example: 'job-billing.export-invoices',
    description: 'one stream: `run-<id>`, `job-<name>`, `team-<id>`',
  },
  team: {
    ...text({ pattern: TEAM_ID_PATTERN, rule: TEAM_ID_RULE }),
    description: "a team token sees its own team's streams only; the admin any team's, or all",
  },
};

const AuditQuery = queryString({
  ...PAGE_PARAMETERS,
  actor: AUDIT_FILTERS.actor,
  type: AUDIT_FILTERS.type,
  stream: AUDIT_FILTERS.stream,
  since: { ...dateTime(), description: 'events recorded at or after this instant' },
  until: { ...dateTime(), description: 'events recorded strictly before this instant' },
  team: AUDIT_FILTERS.team,
});
type AuditQuery = Accepted<typeof AuditQuery>;

export class AuditEventResponse {
  @ApiProperty({ example: 'run-run_8K2' }) streamId!: string;
  @ApiProperty({ example: 2 }) revision!: number;
  @ApiProperty({ example: 'RunLeased' }) type!: string;
  @ApiProperty({ format: 'date-time' }) recordedAt!: string;
  @ApiProperty({ type: String, nullable: true, example: 'worker:billing:worker-7' }) actor!: string | null;
  @ApiProperty({ type: String, nullable: true, description: "the request's id, when a request caused it" })
  correlationId!: string | null;
  @ApiProperty({ type: String, nullable: true, description: "the team whose stream it is; null: the platform's" })
  team!: string | null;
  @ApiProperty({ description: 'the event as recorded (any JSON)' }) data!: unknown;
  @ApiProperty({ type: Object }) metadata!: Record<string, unknown>;
}

export class AuditPageResponse {
  @ApiProperty({ type: () => [AuditEventResponse] }) items!: AuditEventResponse[];
  @ApiProperty({ type: String, nullable: true, description: 'pass as `cursor` for the next page; null on the last' })
  nextCursor!: string | null;
}

/** GET /v1/audit: every decision in the log with who made it, newest first, for auditors. */
@Controller('v1/audit')
@UseGuards(AuthGuard)
export class AuditController {
  constructor(private readonly queries: QueryBus) {}

  @Get()
  @ApiOperation({
    operationId: 'listAuditEvents',
    summary: "The log's events with their actors, newest first (a team: its own streams'; the admin: all)",
  })
  @ApiOkResponse({ type: AuditPageResponse })
  @ListingRefusals()
  async list(
    @CurrentCaller() caller: Caller,
    @CompiledQuery(AuditQuery) query: AuditQuery,
  ): Promise<AuditPageResponse> {
    const { cursor, limit, since, until, ...filter } = query;
    const page = await this.queries.execute(
      new ListAuditEvents(
        requireReader(caller),
        {
          ...filter,
          since: since === undefined ? undefined : new Date(since),
          until: until === undefined ? undefined : new Date(until),
        },
        { after: cursor, size: limit, names: REST_PAGE },
      ),
    );
    return { items: page.items.map(({ node }) => auditEventView(node)), nextCursor: page.nextCursor };
  }
}

export function auditEventView({ event, team }: AuditEvent): AuditEventResponse {
  const { actor, correlationId } = event.metadata;
  return {
    streamId: event.streamId,
    revision: Number(event.revision),
    type: event.type,
    recordedAt: event.recordedAt.toISOString(),
    actor: typeof actor === 'string' ? actor : null,
    correlationId: typeof correlationId === 'string' ? correlationId : null,
    team,
    data: event.data,
    metadata: { ...event.metadata },
  };
}
