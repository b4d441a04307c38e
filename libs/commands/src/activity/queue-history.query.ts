import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { DomainError, type Priority, type ReaderCaller } from '@chronicle/domain';
import { PG_POOL } from '@chronicle/platform';
import { ACTIVITY_RETENTION_HOURS, lagQuantileSeconds, listActivityMinutes } from '@chronicle/projections';

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
 * every team's for the admin; optionally of one queue. Minutes without activity are absent.
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
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

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
    const rows = await listActivityMinutes(this.pool, team, queue, minutes);
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
