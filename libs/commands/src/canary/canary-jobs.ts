import type { Pool } from 'pg';
import type { JobDefinition } from '@chronicle/domain';
import { WrongExpectedRevisionError, type EventStore } from '@chronicle/event-store';
import { defineNewJobs } from '../jobs/define-new-jobs';
import { shardOf } from '../shards/shard-of';

/**
 * The reserved team of the canaries (docs/operations.md, "Canaries"): its id is outside the pattern of
 * team ids, so no team can be made with it, nor can a token of it be issued; its job and queue names
 * begin with `_`, which no job or queue name may.
 */
export const CANARY_TEAM = '_system';
export const CANARY_QUEUE = '_canary';
/** The actor of the canaries' own events (their definitions; their leases and completions). */
export const CANARY_ACTOR = 'system:canary';

/**
 * The canary job of a shard: `_canary.shard-<s>`, with a suffix that makes its name hash to that
 * shard (`.<n>`, the first that does).
 */
export function canaryJobName(shard: number, shards: number): string {
  for (let n = 0; ; n++) {
    const name = `_canary.shard-${shard}.${n}`;
    if (shardOf(name, shards) === shard) return name;
  }
}

/** A canary's definition: every minute, one attempt, done at once by the built-in worker. */
export function canaryJob(shard: number, shards: number): JobDefinition {
  return {
    name: canaryJobName(shard, shards),
    team: CANARY_TEAM,
    queue: CANARY_QUEUE,
    priority: 'critical',
    timeoutSeconds: 30,
    retry: { maxAttempts: 1, baseSeconds: 1, maxSeconds: 1 },
    concurrency: null,
    payload: { canary: true, shard },
    // Each minute's canary on its own: a late one holds none of the next back.
    schedule: { cron: '* * * * *', timeZone: 'UTC', jitterSeconds: 0, overlapPolicy: 'allow_all' },
  };
}

/** Defines the canary jobs of every shard that has none yet (nodes starting together: one of them does). */
export async function ensureCanaryJobs(store: EventStore, pool: Pool, shards: number): Promise<number> {
  const wanted = Array.from({ length: shards }, (_, shard) => canaryJob(shard, shards));
  const { rows } = await pool.query<{ name: string }>('SELECT name FROM jobs WHERE name = ANY($1::text[])', [
    wanted.map((j) => j.name),
  ]);
  const known = new Set(rows.map((r) => r.name));
  const missing = wanted.filter((j) => !known.has(j.name));
  if (missing.length === 0) return 0;
  try {
    await store.unitOfWork(pool, (uow) => defineNewJobs(uow, missing, CANARY_ACTOR));
    return missing.length;
  } catch (err) {
    if (err instanceof WrongExpectedRevisionError) return 0; // another node defined them meanwhile
    throw err;
  }
}
