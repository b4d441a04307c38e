import { sqlList, type Queryable } from '@chronicle/platform';
import { RunState } from '@chronicle/domain';

/** The runs of one queue and priority that are waiting, running or dead. */
export interface QueueStatsRow {
  readonly queue: string;
  readonly priority: string;
  readonly ready: number;
  readonly leased: number;
  readonly retry_wait: number;
  readonly dead: number;
  readonly oldest_ready_at: Date | null;
}

/**
 * Counts per (queue, priority), of one team or (undefined) of all. Three parts, each read from where
 * its runs are (never the finished runs, which are most of `runs`): the waiting runs (`ready_runs`),
 * the leased (`run_leases`), the dead not discarded (runs_dlq_idx). A run is `ready` once its time has
 * come (`now`, the clock the views show states with), `retry_wait` until then.
 */
export async function countQueueRuns(db: Queryable, team: string | undefined, now: Date): Promise<QueueStatsRow[]> {
  const ofTeam = team === undefined ? '' : 'AND team = $2';
  const { rows } = await db.query<QueueStatsRow>({
    text: `WITH counted AS (
             SELECT queue, priority,
                    count(*) FILTER (WHERE available_at <= $1) AS ready, 0 AS leased,
                    count(*) FILTER (WHERE state = ${sqlList([RunState.retryWait])} AND available_at > $1) AS retry_wait,
                    0 AS dead, min(available_at) FILTER (WHERE available_at <= $1) AS oldest_ready_at
               FROM ready_runs WHERE true ${ofTeam} GROUP BY queue, priority
             UNION ALL
             SELECT queue, priority, 0, count(*), 0, 0, NULL
               FROM run_leases WHERE true ${ofTeam} GROUP BY queue, priority
             UNION ALL
             SELECT queue, priority, 0, 0, 0, count(*), NULL
               FROM runs WHERE ended = ${sqlList([RunState.dead])} AND NOT discarded ${ofTeam} GROUP BY queue, priority
           )
           SELECT queue, priority, sum(ready)::int AS ready, sum(leased)::int AS leased,
                  sum(retry_wait)::int AS retry_wait, sum(dead)::int AS dead, min(oldest_ready_at) AS oldest_ready_at
             FROM counted GROUP BY queue, priority`,
    values: team === undefined ? [now] : [now, team],
  });
  return rows;
}

/** The queues granted to any team: the admin's overview shows them even when they have nothing. */
export async function findGrantedQueues(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ queue: string }>('SELECT DISTINCT queue FROM queue_grants');
  return rows.map((r) => r.queue);
}
