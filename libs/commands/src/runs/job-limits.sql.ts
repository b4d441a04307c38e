import type { Queryable } from '@chronicle/platform';

/** One concurrency key of a job (a run's `concurrencyKey`), as its limit is counted. */
export interface JobKey {
  readonly job: string;
  readonly key: string;
}

/**
 * Serialises, per job, the decisions that count its runs against its limit:
 * claims of a limited job's runs and enqueues with ifRunning: reject
 * (lock_limits, migrations/0039: the locks claims take too, in name order,
 * so two batches cannot deadlock). Advisory: it writes nothing, so es_append
 * may still come after it. Counts read after it see every such decision
 * committed before it was granted.
 */
export async function lockJobLimits(db: Queryable, jobs: readonly string[]): Promise<void> {
  if (jobs.length === 0) return;
  await db.query({ name: 'lock_job_limits', text: "SELECT lock_limits('{}', $1::text[], '{}', '{}')", values: [jobs] });
}

/**
 * The room each limit has left: by capped queue (its cap), by job (its concurrency), by job and key (its
 * perKeyConcurrency), and by job and ordering key (1 while none of its runs is leased, 0 otherwise).
 */
export interface LimitRooms {
  readonly queues: Map<string, number>;
  readonly jobs: Map<string, number>;
  /** By limitKey. */
  readonly keys: Map<string, number>;
  /** By limitKey. */
  readonly orders: Map<string, number>;
  /** By limitKey: the seq of each ordering key's head, the one run of the key that may be leased now. */
  readonly heads: Map<string, number>;
}

/** A job and key as LimitRooms.keys names it. */
export function limitKey(job: string, key: string): string {
  return `${job}\u001f${key}`;
}

/**
 * The locks of these queues' caps (those that have one), these jobs' limits, these concurrency keys' and
 * these ordering keys' (lock_and_count_limits, migrations/0042), then the room each has left, counted once
 * they are granted: one round trip.
 */
export async function lockAndCountLimits(
  db: Queryable,
  limits: {
    readonly queues: readonly string[];
    readonly jobs: readonly string[];
    readonly keys: readonly JobKey[];
    readonly orders: readonly JobKey[];
  },
): Promise<LimitRooms> {
  const { rows } = await db.query<{
    kind: 'queue' | 'job' | 'key' | 'order';
    name: string;
    key: string | null;
    room: number;
    head: string | null;
  }>({
    name: 'lock_and_count_limits',
    text: `SELECT kind, name, key, room, head
             FROM lock_and_count_limits($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])`,
    values: [
      limits.queues,
      limits.jobs,
      limits.keys.map((k) => k.job),
      limits.keys.map((k) => k.key),
      limits.orders.map((k) => k.job),
      limits.orders.map((k) => k.key),
    ],
  });
  const rooms: LimitRooms = {
    queues: new Map(),
    jobs: new Map(),
    keys: new Map(),
    orders: new Map(),
    heads: new Map(),
  };
  for (const { kind, name, key, room, head } of rows)
    if (kind === 'queue') rooms.queues.set(name, room);
    else if (kind === 'job') rooms.jobs.set(name, room);
    else if (kind === 'key') rooms.keys.set(limitKey(name, key!), room);
    else {
      rooms.orders.set(limitKey(name, key!), room);
      if (head !== null) rooms.heads.set(limitKey(name, key!), Number(head));
    }
  return rooms;
}
