import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { PRIORITIES, type RateLimit, type ReaderCaller } from '@chronicle/domain';
import { CLOCK, PG_POOL, type Clock } from '@chronicle/platform';
import { addUpPerKey } from '../shards/add-up-per-key';
import { RunServers } from '../shards/run-servers';
import { findQueuesLimits } from '../queues/queue-limits.sql';
import { countQueueRuns, findGrantedQueues, type QueueStatsRow } from './queue-stats.sql';

/** The runs of one queue and priority that are waiting, running or dead, as the overview shows them. */
export interface QueueStats {
  readonly queue: string;
  readonly priority: string;
  readonly ready: number;
  readonly leased: number;
  readonly retryWait: number;
  readonly dead: number;
  /** Since the oldest ready run became ready; null when none is. */
  readonly oldestReadyAgeSeconds: number | null;
  /** The queue's cap on its leased runs, all teams' and priorities' together (queue_limits); null: none. */
  readonly concurrencyLimit: number | null;
  /** The queue's rate of leased runs (queue_rates); null: none. */
  readonly rateLimit: RateLimit | null;
}

/**
 * Per queue and priority, of the team's own runs (the admin: every team's), counted on every server runs
 * are kept on and added up. Every queue the caller is granted is there with each priority, zeros
 * included; by queue, then priority (critical first).
 */
export class GetQueueStats extends Query<QueueStats[]> {
  constructor(readonly caller: ReaderCaller) {
    super();
  }
}

@QueryHandler(GetQueueStats)
export class GetQueueStatsHandler implements IQueryHandler<GetQueueStats> {
  constructor(
    @Inject(PG_POOL) private readonly pool: Pool,
    private readonly servers: RunServers,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute({ caller }: GetQueueStats): Promise<QueueStats[]> {
    const now = this.clock.now();
    const team = caller.kind === 'team' ? caller.team : undefined;
    // The runs are counted where they are kept; the grants are the control database's.
    const [answers, queues] = await Promise.all([
      this.servers.answering((server) => countQueueRuns(server.pool, team, now)),
      caller.kind === 'team' ? caller.queues : findGrantedQueues(this.pool),
    ]);
    const key = (queue: string, priority: string): string => JSON.stringify([queue, priority]);
    const rows = addUpPerKey(answers, (row) => key(row.queue, row.priority), addQueueRuns);
    const stats = new Map<string, QueueStats>();
    for (const queue of queues)
      for (const priority of PRIORITIES)
        stats.set(key(queue, priority), {
          queue,
          priority,
          ready: 0,
          leased: 0,
          retryWait: 0,
          dead: 0,
          oldestReadyAgeSeconds: null,
          concurrencyLimit: null,
          rateLimit: null,
        });
    for (const row of rows)
      stats.set(key(row.queue, row.priority), {
        queue: row.queue,
        priority: row.priority,
        ready: row.ready,
        leased: row.leased,
        retryWait: row.retry_wait,
        dead: row.dead,
        oldestReadyAgeSeconds:
          row.oldest_ready_at === null ? null : Math.max(0, (now.getTime() - row.oldest_ready_at.getTime()) / 1000),
        concurrencyLimit: null,
        rateLimit: null,
      });
    const limits = await findQueuesLimits(this.pool, [...new Set([...stats.values()].map((s) => s.queue))]);
    const rank = (priority: string): number => PRIORITIES.indexOf(priority as (typeof PRIORITIES)[number]);
    return [...stats.values()]
      .map((s) => ({
        ...s,
        concurrencyLimit: limits.get(s.queue)?.concurrency ?? null,
        rateLimit: limits.get(s.queue)?.rate ?? null,
      }))
      .sort((a, b) => (a.queue === b.queue ? rank(a.priority) - rank(b.priority) : a.queue < b.queue ? -1 : 1));
  }
}

/** Two servers' counts of one queue and priority: summed, and the older of their oldest ready runs. */
function addQueueRuns(a: QueueStatsRow, b: QueueStatsRow): QueueStatsRow {
  return {
    queue: a.queue,
    priority: a.priority,
    ready: a.ready + b.ready,
    leased: a.leased + b.leased,
    retry_wait: a.retry_wait + b.retry_wait,
    dead: a.dead + b.dead,
    oldest_ready_at:
      a.oldest_ready_at === null || (b.oldest_ready_at !== null && b.oldest_ready_at < a.oldest_ready_at)
        ? b.oldest_ready_at
        : a.oldest_ready_at,
  };
}
