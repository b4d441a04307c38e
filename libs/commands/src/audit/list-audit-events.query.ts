import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { listedTeam, type ReaderCaller, isRunStream, RUN_STREAM_PREFIX } from '@chronicle/domain';
import { comparePositions, type EventStore, type LogPosition, type RecordedEvent } from '@chronicle/event-store';
import { EVENT_STORE, PG_POOL, type Queryable } from '@chronicle/platform';
import { decodeCursor, encodeCursor, notACursor, pageOf, sizeOf, type Page, type PageRequest } from '../listings/page';
import { RunServers } from '../shards/run-servers';
import { sqlValues } from '../listings/sql-values';

/** The filters of GET /v1/audit and GraphQL's auditEvents: each given narrows the events listed. */
export interface AuditFilter {
  readonly actor?: string | undefined;
  readonly type?: string | undefined;
  readonly stream?: string | undefined;
  /** Recorded at or after. */
  readonly since?: Date | undefined;
  /** Recorded before. */
  readonly until?: Date | undefined;
  /** The admin's choice of one team; a team is always kept to its own. */
  readonly team?: string | undefined;
}

/** An event of the audit trail: the event as the log holds it, and the team whose stream it is. */
export interface AuditEvent {
  readonly event: RecordedEvent;
  /** null: the platform's own (the admin sees those). */
  readonly team: string | null;
}

/** The events of the log a team (its own streams') or the admin (all) may see, newest first. */
export class ListAuditEvents extends Query<Page<AuditEvent>> {
  constructor(
    readonly caller: ReaderCaller,
    readonly filter: AuditFilter,
    readonly page: PageRequest,
  ) {
    super();
  }
}

/**
 * With runs on several servers (docs/sharding.md) the trail is the merge of the logs: the control
 * database's (its index of the other streams, and the runs it keeps) and each other server's (its
 * runs'). Positions of two logs do not compare, so a page takes each log's next events after the
 * cursor's position in that log, newest first, and interleaves them by the time they were recorded,
 * each log's own order kept; its cursor names each log's position. With one database, the one log's
 * page, its cursor a position, as ever.
 */
@QueryHandler(ListAuditEvents)
export class ListAuditEventsHandler implements IQueryHandler<ListAuditEvents> {
  constructor(
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    private readonly servers: RunServers,
  ) {}

  async execute({ caller, filter, page }: ListAuditEvents): Promise<Page<AuditEvent>> {
    const size = sizeOf(page);
    const listed = { ...filter, team: listedTeam(caller, filter.team) };
    const others = this.servers.all.filter((s) => !s.isControl);
    if (others.length === 0) {
      const after = page.after == null ? undefined : decodePositionCursor(page.after, page.names.after);
      const events = await this.controlPage(listed, after, size + 1);
      return pageOf(events, size, ({ event }) => positionKey(event.position));
    }
    const after = page.after == null ? {} : decodeLogsCursor(page.after, page.names.after);
    const logs = await Promise.all([
      this.controlPage(listed, after[CONTROL_LOG], size + 1).then((events) => ({ log: CONTROL_LOG, events })),
      ...others.map(async (server) => ({
        log: server.name,
        events:
          filter.stream === undefined || isRunStream(filter.stream)
            ? await findRunEvents(server.eventStore, listed, after[server.name], size + 1)
            : [],
      })),
    ]);
    // Interleaved by time, newest first, each log's order kept; the cursor after each item names every log's position.
    const positions: Record<string, readonly [string, string]> = Object.fromEntries(
      Object.entries(after).map(([log, position]) => [log, positionKey(position)]),
    );
    const heads = logs.map(() => 0);
    const items: Array<{ node: AuditEvent; cursor: string }> = [];
    while (items.length < size) {
      let pick = -1;
      for (const [i, { events }] of logs.entries()) {
        const head = events[heads[i]!];
        if (head === undefined) continue;
        const best = pick === -1 ? undefined : logs[pick]!.events[heads[pick]!]!;
        if (best === undefined || head.event.recordedAt > best.event.recordedAt) pick = i;
      }
      if (pick === -1) break;
      const node = logs[pick]!.events[heads[pick]!]!;
      heads[pick]! += 1;
      positions[logs[pick]!.log] = positionKey(node.event.position);
      items.push({ node, cursor: encodeCursor([JSON.stringify(positions)]) });
    }
    const more = logs.some(({ events }, i) => events.length > heads[i]!);
    return { items, nextCursor: more && items.length > 0 ? items[items.length - 1]!.cursor : null };
  }

  /** The control database's log: two sources, each newest first and a page long (the runs' events, the index of the rest). */
  private async controlPage(filter: AuditFilter, after: LogPosition | undefined, limit: number): Promise<AuditEvent[]> {
    const [runs, others] = await Promise.all([
      filter.stream === undefined || isRunStream(filter.stream)
        ? findRunEvents(this.eventStore, filter, after, limit)
        : [],
      filter.stream === undefined || !isRunStream(filter.stream) ? this.findIndexed(filter, after, limit) : [],
    ]);
    return [...runs, ...others].sort((a, b) => comparePositions(b.event.position, a.event.position)).slice(0, limit);
  }

  /** The other streams' events, by the audit index; the index says which events, the log holds them. */
  private async findIndexed(filter: AuditFilter, after: LogPosition | undefined, limit: number): Promise<AuditEvent[]> {
    const rows = await findAuditRows(this.pool, filter, after, limit);
    const events = await this.eventStore.readEvents(
      rows.map((row) => ({ streamId: row.stream_id, revision: BigInt(row.revision) })),
    );
    const byRef = new Map(events.map((e) => [`${e.revision}|${e.streamId}`, e]));
    return rows.flatMap((row) => {
      const event = byRef.get(`${row.revision}|${row.stream_id}`);
      // Not in the log any more: nothing to show.
      return event === undefined ? [] : [{ event, team: row.team }];
    });
  }
}

interface AuditRow {
  readonly stream_id: string;
  readonly revision: string;
  readonly team: string | null;
}

/**
 * A page of the audit index (the streams that never end), newest first, after `after` (exclusive): one backwards range scan of the
 * index whose key leads with the filter given (the team's, the actor's, the stream's or the type's),
 * or of the primary key. The SQL holds only the filters given, so each statement is planned for its
 * index.
 */
async function findAuditRows(
  db: Queryable,
  filter: AuditFilter,
  after: LogPosition | undefined,
  limit: number,
): Promise<AuditRow[]> {
  const { values, param } = sqlValues();
  const conditions: string[] = [];
  if (filter.team !== undefined) conditions.push(`team = ${param(filter.team)}`);
  if (filter.actor !== undefined) conditions.push(`actor = ${param(filter.actor)}`);
  if (filter.stream !== undefined) conditions.push(`stream_id = ${param(filter.stream)}`);
  if (filter.type !== undefined) conditions.push(`event_type = ${param(filter.type)}`);
  if (filter.since !== undefined) conditions.push(`recorded_at >= ${param(filter.since)}`);
  if (filter.until !== undefined) conditions.push(`recorded_at < ${param(filter.until)}`);
  if (after !== undefined)
    conditions.push(
      `(commit_position, prepare_position) < (${param(after.commit.toString())}, ${param(after.prepare.toString())})`,
    );
  const { rows } = await db.query<AuditRow>({
    text: `SELECT stream_id, revision::text, team FROM audit_events
            ${conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`}
            ORDER BY commit_position DESC, prepare_position DESC
            LIMIT ${param(limit)}`,
    values,
  });
  return rows;
}

/** The control database's log in a cursor of several logs (the others are named by their server). */
const CONTROL_LOG = 'control';

/** Runs' events, from a log: each records its run's team. */
async function findRunEvents(
  eventStore: EventStore,
  filter: AuditFilter,
  after: LogPosition | undefined,
  limit: number,
): Promise<AuditEvent[]> {
  const events = await eventStore.findEvents({
    streamPrefix: RUN_STREAM_PREFIX,
    streamId: filter.stream,
    type: filter.type,
    team: filter.team,
    actor: filter.actor,
    since: filter.since,
    until: filter.until,
    before: after,
    maxCount: limit,
  });
  return events.map((event) => {
    const team = event.metadata['team'];
    return { event, team: typeof team === 'string' ? team : null };
  });
}

function positionKey(position: LogPosition): [string, string] {
  return [position.commit.toString(), position.prepare.toString()];
}

/** A cursor of several logs: each log's position, by its name. */
function decodeLogsCursor(value: string, field: string): Record<string, LogPosition> {
  const [json] = decodeCursor(value, 1, field) as [string];
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    throw notACursor(field);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw notACursor(field);
  return Object.fromEntries(
    Object.entries(parsed).map(([log, key]) => {
      if (!Array.isArray(key) || key.length !== 2 || key.some((k) => typeof k !== 'string')) throw notACursor(field);
      return [log, parsePosition(key[0] as string, key[1] as string, field)];
    }),
  );
}

function parsePosition(commit: string, prepare: string, field: string): LogPosition {
  if (!/^-?\d{1,19}$/.test(commit) || !/^-?\d{1,19}$/.test(prepare)) throw notACursor(field);
  return { commit: BigInt(commit), prepare: BigInt(prepare) };
}

function decodePositionCursor(value: string, field: string): LogPosition {
  const [commit, prepare] = decodeCursor(value, 2, field) as [string, string];
  return parsePosition(commit, prepare, field);
}
