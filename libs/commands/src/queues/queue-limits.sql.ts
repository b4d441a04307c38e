import type { RateLimit, RatePeriod } from '@chronicle/domain';
import type { Queryable } from '@chronicle/platform';
import { writeRate } from '../runs/rates.sql';

/**
 * A queue's cap, at most this many of its runs leased at once (queue_limits, migrations/0040), and its
 * rate (queue_rates, migrations/0044); null: none.
 */
export interface QueueLimits {
  readonly concurrency: number | null;
  readonly rate: RateLimit | null;
}

/** A queue's cap and rate (the control database's). */
export async function findQueueLimits(db: Queryable, queue: string): Promise<QueueLimits> {
  return (await findQueuesLimits(db, [queue])).get(queue)!;
}

/** These queues' caps and rates, by queue: every queue named, with null for what it has none of. */
export async function findQueuesLimits(db: Queryable, queues: readonly string[]): Promise<Map<string, QueueLimits>> {
  const { rows } = await db.query<{
    queue: string;
    concurrency: number | null;
    limit: number | null;
    per: RatePeriod | null;
    burst: number | null;
  }>({
    name: 'queues_limits',
    text: `SELECT q.queue, c.concurrency, r."limit", r.per, r.burst
             FROM unnest($1::text[]) AS q(queue)
             LEFT JOIN queue_limits c ON c.queue = q.queue LEFT JOIN queue_rates r ON r.queue = q.queue`,
    values: [queues],
  });
  return new Map(
    rows.map(({ queue, concurrency, limit, per, burst }) => [
      queue,
      {
        concurrency,
        rate: limit === null || per === null ? null : { limit, per, ...(burst === limit ? {} : { burst: burst! }) },
      },
    ]),
  );
}

/** Writes a queue's cap and rate; null removes one. */
export async function writeQueueLimits(db: Queryable, queue: string, limits: QueueLimits): Promise<void> {
  if (limits.concurrency === null) await db.query('DELETE FROM queue_limits WHERE queue = $1', [queue]);
  else
    await db.query(
      `INSERT INTO queue_limits (queue, concurrency) VALUES ($1, $2)
       ON CONFLICT (queue) DO UPDATE SET concurrency = EXCLUDED.concurrency, set_at = now()`,
      [queue, limits.concurrency],
    );
  await writeRate(db, 'queue', queue, limits.rate);
}

/**
 * Over several servers, the fleet's lock of each of these queues' caps, in the control database: a claim
 * over the servers holds it from counting the queue's leased runs on every server until its claims there
 * have committed (RunClaims). Another name than the lock a server's own claim takes (lock_limits), which
 * the control database's share of the runs takes in a transaction of its own meanwhile.
 */
export async function lockFleetQueueCaps(db: Queryable, queues: readonly string[]): Promise<void> {
  await db.query({
    name: 'lock_fleet_queue_caps',
    text: `SELECT pg_advisory_xact_lock(hashtextextended('queue-concurrency-fleet-' || q, 0))
             FROM unnest($1::text[]) AS q ORDER BY q COLLATE "C"`,
    values: [[...queues].sort()],
  });
}

/** The runs of these queues leased on one server, by queue (run_leases holds the leased runs only). */
export async function countLeasedByQueue(db: Queryable, queues: readonly string[]): Promise<Map<string, number>> {
  const { rows } = await db.query<{ queue: string; leased: number }>({
    name: 'count_leased_by_queue',
    text: 'SELECT queue, count(*)::int AS leased FROM run_leases WHERE queue = ANY($1::text[]) GROUP BY queue',
    values: [queues],
  });
  return new Map(rows.map((r) => [r.queue, r.leased]));
}
