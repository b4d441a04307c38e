import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { DomainError, type Priority, type ReaderCaller } from '@chronicle/domain';
import {
  ACTIVITY_RETENTION_HOURS,
  type ActivityMinuteRow,
  lagQuantileSeconds,
  listActivityMinutes,
} from '@chronicle/projections';
import { addUpPerKey } from '../shards/add-up-per-key';
import { RunServers } from '../shards/run-servers';

/** One minute of one priority: what the dashboard's charts plot. */
export interface QueueHistoryPoint {
  /** The minute's start, UTC. */
  readonly minute: Date;
  readonly priority: Priority;
  readonly leased: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly leaseExpired: number;
  readonly dead: number;
  /** Schedule lag of the minute's first leases (lease time minus due time), from the histogram; null without any. */
  readonly lagP50Seconds: number | null;
  readonly lagP99Seconds: number | null;
}

export const QUEUE_HISTORY_DEFAULT_MINUTES = 60;
/** As far back as the read model keeps. */
export const QUEUE_HISTORY_MAX_MINUTES = ACTIVITY_RETENTION_HOURS * 60;

/**
 * The last minutes of run activity per priority (the run-activity read model): a team's own runs, or
 * every team's for the admin; optionally of one queue. Minutes without activity are absent. Each server
 * runs are kept on counts its own runs' activity: the minutes are added up over them.
 */
export class QueueHistory extends Query<QueueHistoryPoint[]> {
  constructor(
    readonly caller: ReaderCaller,
    readonly queue: string | undefined,
    readonly minutes: number = QUEUE_HISTORY_DEFAULT_MINUTES,
  ) {
    super();
  }
}

@QueryHandler(QueueHistory)
export class QueueHistoryHandler implements IQueryHandler<QueueHistory> {
  constructor(private readonly servers: RunServers) {}

  async execute({ caller, queue, minutes }: QueueHistory): Promise<QueueHistoryPoint[]> {
    if (!Number.isInteger(minutes) || minutes < 1 || minutes > QUEUE_HISTORY_MAX_MINUTES)
      throw new DomainError(
        'validation-error',
        `minutes must be a whole number from 1 to ${QUEUE_HISTORY_MAX_MINUTES}`,
        {
          field: 'minutes',
        },
      );
    const team = caller.kind === 'admin' ? undefined : caller.team;
    const answers = await this.servers.answering((server) => listActivityMinutes(server.pool, team, queue, minutes));
    // In time order, then by priority, as each server answers.
    const rows = addUpPerKey(answers, (row) => `${row.minute.toISOString()} ${row.priority}`, addActivity).sort(
      (a, b) =>
        a.minute.getTime() - b.minute.getTime() || (a.priority < b.priority ? -1 : a.priority > b.priority ? 1 : 0),
    );
    return rows.map((row) => ({
      minute: row.minute,
      priority: row.priority as Priority,
      leased: row.leased,
      succeeded: row.succeeded,
      failed: row.failed,
      leaseExpired: row.lease_expired,
      dead: row.dead,
      lagP50Seconds: lagQuantileSeconds(row.lag_counts, 0.5),
      lagP99Seconds: lagQuantileSeconds(row.lag_counts, 0.99),
    }));
  }
}

/** Two servers' activity of one minute and priority: the counts and the lag histograms' buckets summed. */
function addActivity(a: ActivityMinuteRow, b: ActivityMinuteRow): ActivityMinuteRow {
  return {
    minute: a.minute,
    priority: a.priority,
    leased: a.leased + b.leased,
    succeeded: a.succeeded + b.succeeded,
    failed: a.failed + b.failed,
    lease_expired: a.lease_expired + b.lease_expired,
    dead: a.dead + b.dead,
    lag_counts: Array.from(
      { length: Math.max(a.lag_counts.length, b.lag_counts.length) },
      (_, i) => (a.lag_counts[i] ?? 0) + (b.lag_counts[i] ?? 0),
    ),
  };
}
