import type { Queryable } from '@chronicle/platform';

/** One (minute, team, queue, priority)'s counts, added to what the row has. */
export interface ActivityIncrement {
  readonly minute: Date;
  readonly team: string;
  readonly queue: string;
  readonly priority: string;
  leased: number;
  succeeded: number;
  failed: number;
  leaseExpired: number;
  dead: number;
  readonly lagCounts: number[];
}

/**
 * `increments` added up by minute and place, each count times `sign`: one per key, as addActivity
 * takes them (an upsert touches a row once), -1 to take counts away.
 */
export function sumActivity(increments: readonly ActivityIncrement[], sign: 1 | -1 = 1): ActivityIncrement[] {
  const byKey = new Map<string, ActivityIncrement>();
  for (const i of increments) {
    const key = JSON.stringify([i.team, i.minute.getTime(), i.queue, i.priority]);
    const sum = byKey.get(key);
    if (sum === undefined) {
      byKey.set(key, {
        ...i,
        leased: sign * i.leased,
        succeeded: sign * i.succeeded,
        failed: sign * i.failed,
        leaseExpired: sign * i.leaseExpired,
        dead: sign * i.dead,
        lagCounts: i.lagCounts.map((n) => sign * n),
      });
      continue;
    }
    sum.leased += sign * i.leased;
    sum.succeeded += sign * i.succeeded;
    sum.failed += sign * i.failed;
    sum.leaseExpired += sign * i.leaseExpired;
    sum.dead += sign * i.dead;
    i.lagCounts.forEach((n, b) => (sum.lagCounts[b]! += sign * n));
  }
  return [...byKey.values()];
}

/**
 * The counts `increments` added taken away again (their runs moved to another server, which counts
 * them now), and the minutes left with nothing counted deleted: a minute's row exists only where
 * something was counted, as a rebuild from the log would have it.
 */
export async function takeActivity(db: Queryable, increments: readonly ActivityIncrement[]): Promise<void> {
  const taken = sumActivity(increments, -1);
  if (taken.length === 0) return;
  await addActivity(db, taken);
  await db.query(
    `DELETE FROM run_activity_minutes
      WHERE leased = 0 AND succeeded = 0 AND failed = 0 AND lease_expired = 0 AND dead = 0
        AND coalesce(array_position(ARRAY(SELECT n <> 0 FROM unnest(lag_counts) n), true), 0) = 0`,
  );
}

/** How long minutes are kept: the dashboard shows an hour, an operator may look back a day. */
export const ACTIVITY_RETENTION_HOURS = 24;

/** What a run's events are counted under, and the due time its first lease's lag is measured from. */
export interface RunPlace {
  readonly team: string;
  readonly queue: string;
  readonly priority: string;
  readonly dueAt: Date;
  /** Team, queue and priority as one key (names hold no NUL: refused as input). */
  readonly group: string;
}

/** Where the runs are: what a run event is counted under, and the due time its first lease is measured from. */
export async function findRunPlaces(db: Queryable, runIds: readonly string[]): Promise<Map<string, RunPlace>> {
  // The due time as epoch milliseconds: a number, not a timestamp's text to parse (a rebuild reads every run).
  const { rows } = await db.query<{ run_id: string; team: string; queue: string; priority: string; due_ms: number }>(
    'SELECT run_id, team, queue, priority, (extract(epoch FROM due_at) * 1000)::float8 AS due_ms FROM runs WHERE run_id = ANY($1::text[])',
    [runIds],
  );
  return new Map(rows.map((r) => [r.run_id, runPlace(r.team, r.queue, r.priority, new Date(r.due_ms))]));
}

export function runPlace(team: string, queue: string, priority: string, dueAt: Date): RunPlace {
  return { team, queue, priority, dueAt, group: `${team}\u0000${queue}\u0000${priority}` };
}

/**
 * One statement for the batch: each increment added to its row (the histogram element by element),
 * and the minutes past retention deleted (by run_activity_minutes_minute_idx; nothing to do on most
 * batches). The two never touch the same row: old minutes are not inserted.
 */
export async function addActivity(db: Queryable, increments: readonly ActivityIncrement[]): Promise<void> {
  await db.query(
    `WITH added AS (
       INSERT INTO run_activity_minutes AS a
              (team, minute, queue, priority, leased, succeeded, failed, lease_expired, dead, lag_counts)
       SELECT team, minute, queue, priority, leased, succeeded, failed, lease_expired, dead, lag_counts
         FROM json_to_recordset($1::json) AS x(team text, minute timestamptz, queue text, priority text,
              leased int, succeeded int, failed int, lease_expired int, dead int, lag_counts int[])
        -- A rebuild's old minutes are not written only to be deleted below.
        WHERE minute >= now() - make_interval(hours => $2)
       ON CONFLICT (team, minute, queue, priority) DO UPDATE SET
              leased = a.leased + EXCLUDED.leased,
              succeeded = a.succeeded + EXCLUDED.succeeded,
              failed = a.failed + EXCLUDED.failed,
              lease_expired = a.lease_expired + EXCLUDED.lease_expired,
              dead = a.dead + EXCLUDED.dead,
              lag_counts = ARRAY(SELECT coalesce(u.x, 0) + coalesce(u.y, 0)
                                   FROM unnest(a.lag_counts, EXCLUDED.lag_counts) WITH ORDINALITY AS u(x, y, i)
                                  ORDER BY u.i)
       RETURNING 1
     )
     DELETE FROM run_activity_minutes WHERE minute < now() - make_interval(hours => $2)`,
    [
      JSON.stringify(
        increments.map((i) => ({
          team: i.team,
          minute: i.minute.toISOString(),
          queue: i.queue,
          priority: i.priority,
          leased: i.leased,
          succeeded: i.succeeded,
          failed: i.failed,
          lease_expired: i.leaseExpired,
          dead: i.dead,
          lag_counts: i.lagCounts,
        })),
      ),
      ACTIVITY_RETENTION_HOURS,
    ],
  );
}

/** A minute of one priority, summed over the teams and queues asked about. */
export interface ActivityMinuteRow {
  readonly minute: Date;
  readonly priority: string;
  readonly leased: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly lease_expired: number;
  readonly dead: number;
  readonly lag_counts: number[];
}

/**
 * The last `minutes` whole minutes (the current one included), per minute and priority, of one team
 * (its key range) or of all (the minute index), optionally of one queue. At most minutes x 3 rows.
 */
export async function listActivityMinutes(
  db: Queryable,
  team: string | undefined,
  queue: string | undefined,
  minutes: number,
): Promise<ActivityMinuteRow[]> {
  const { rows } = await db.query<ActivityMinuteRow>({
    name: 'activity_minutes',
    text: `WITH picked AS (
             SELECT * FROM run_activity_minutes
              WHERE ($1::text IS NULL OR team = $1) AND ($2::text IS NULL OR queue = $2)
                AND minute >= date_trunc('minute', now()) - make_interval(mins => $3 - 1)
           ), lags AS (
             SELECT minute, priority, array_agg(n ORDER BY i) AS lag_counts
               FROM (SELECT p.minute, p.priority, u.i, sum(u.n)::int AS n
                       FROM picked p, unnest(p.lag_counts) WITH ORDINALITY AS u(n, i)
                      GROUP BY 1, 2, 3) per_bucket
              GROUP BY 1, 2
           )
           SELECT p.minute, p.priority, sum(p.leased)::int AS leased, sum(p.succeeded)::int AS succeeded,
                  sum(p.failed)::int AS failed, sum(p.lease_expired)::int AS lease_expired,
                  sum(p.dead)::int AS dead, l.lag_counts
             FROM picked p JOIN lags l USING (minute, priority)
            GROUP BY p.minute, p.priority, l.lag_counts
            ORDER BY p.minute, p.priority`,
    values: [team ?? null, queue ?? null, minutes],
  });
  return rows;
}
