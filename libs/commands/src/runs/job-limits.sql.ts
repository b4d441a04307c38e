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
  /** By bucket name: the whole tokens of each rate bucket. */
  readonly rates: Map<string, number>;
  /** By bucket name: each rate bucket's exact tokens, and the instant they were counted at. */
  readonly buckets: Map<string, { readonly tokens: number; readonly countedAt: Date }>;
}

/**
 * A token bucket a run draws from when it is leased (migrations/0044, 0045): `job:<job>` (its job's rate),
 * `key:<job><US><key>` (its job's keyRate, by its concurrency key), `queue:<queue>` (its queue's rate),
 * `team:<team>` (its team's leaseRate).
 */
export interface RateBucket {
  readonly name: string;
  readonly perSecond: number;
  readonly burst: number;
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
    readonly rates: readonly RateBucket[];
  },
): Promise<LimitRooms> {
  const { rows } = await db.query<{
    kind: 'queue' | 'job' | 'key' | 'order' | 'rate';
    name: string;
    key: string | null;
    room: number;
    head: string | null;
    tokens: number | null;
    counted_at: Date | null;
  }>({
    name: 'lock_and_count_limits',
    text: `SELECT kind, name, key, room, head, tokens, counted_at
             FROM lock_and_count_limits($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                                        $7::text[], $8::float8[], $9::integer[])`,
    values: [
      limits.queues,
      limits.jobs,
      limits.keys.map((k) => k.job),
      limits.keys.map((k) => k.key),
      limits.orders.map((k) => k.job),
      limits.orders.map((k) => k.key),
      limits.rates.map((b) => b.name),
      limits.rates.map((b) => b.perSecond),
      limits.rates.map((b) => b.burst),
    ],
  });
  const rooms: LimitRooms = {
    queues: new Map(),
    jobs: new Map(),
    keys: new Map(),
    orders: new Map(),
    heads: new Map(),
    rates: new Map(),
    buckets: new Map(),
  };
  for (const { kind, name, key, room, head, tokens, counted_at } of rows)
    if (kind === 'queue') rooms.queues.set(name, room);
    else if (kind === 'job') rooms.jobs.set(name, room);
    else if (kind === 'key') rooms.keys.set(limitKey(name, key!), room);
    else if (kind === 'rate') {
      rooms.rates.set(name, room);
      rooms.buckets.set(name, { tokens: tokens!, countedAt: counted_at! });
    } else {
      rooms.orders.set(limitKey(name, key!), room);
      if (head !== null) rooms.heads.set(limitKey(name, key!), Number(head));
    }
  return rooms;
}

/**
 * Writes back the buckets runs were leased from: each one's tokens as counted (lockAndCountLimits) less one
 * per run taken, as of the instant they were counted. After the claim's append (a write before it would
 * give the transaction an id before es_append), under the buckets' locks, which the claim holds until it
 * commits.
 */
export async function takeRateTokens(
  db: Queryable,
  taken: ReadonlyMap<string, number>,
  buckets: LimitRooms['buckets'],
): Promise<void> {
  const names = [...taken.keys()].filter((name) => buckets.has(name));
  if (names.length === 0) return;
  await db.query({
    name: 'take_rate_tokens',
    text: `INSERT INTO rate_buckets (name, tokens, refilled_at)
           SELECT * FROM unnest($1::text[], $2::float8[], $3::timestamptz[])
           ON CONFLICT (name) DO UPDATE SET tokens = EXCLUDED.tokens, refilled_at = EXCLUDED.refilled_at`,
    values: [
      names,
      names.map((name) => Math.max(0, buckets.get(name)!.tokens - taken.get(name)!)),
      names.map((name) => buckets.get(name)!.countedAt),
    ],
  });
}
