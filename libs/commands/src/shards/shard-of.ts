import { createHash } from 'node:crypto';

/**
 * The slots a job's hash falls in: a run id names its job's slot (runSlot), and a shard is a slot
 * modulo the shard count, the same shard as shardOf's whenever the count divides SLOTS.
 */
export const SLOTS = 4096;

/** Jobs' hashes, as they were asked for: every new run's id names its job's slot, and a deployment's jobs are few. */
const hashes = new Map<string, number>();
/** Names held at most; past it the map starts over. */
const HELD_HASHES = 10_000;

/** The first 32 bits of the MD5 of a job's name (UTF-8), as an unsigned number: what its shard and slot come from. */
function jobHash(job: string): number {
  let hash = hashes.get(job);
  if (hash === undefined) {
    if (hashes.size >= HELD_HASHES) hashes.clear();
    hash = createHash('md5').update(job, 'utf8').digest().readUInt32BE(0);
    hashes.set(job, hash);
  }
  return hash;
}

/**
 * The shard of a job (docs/architecture.md, "Shards and scheduler nodes"): its hash modulo the
 * deployment's shard count. The SQL twin is chronicle_shard (migrations/0021); shard-ownership.int-spec.ts
 * holds them equal.
 */
export function shardOf(job: string, shards: number): number {
  return jobHash(job) % shards;
}

/** A job's slot (docs/sharding.md): its hash modulo SLOTS. */
export function slotOf(job: string): number {
  return jobHash(job) % SLOTS;
}

/** A run id that names its slot: `run_`, then 32 hex digits laid out as a UUIDv8 with the slot in hex 13-15. */
const SLOTTED_RUN_ID = /^run_[0-9a-f]{12}8([0-9a-f]{3})[89ab][0-9a-f]{15}$/;

/** The slot a run id names, or undefined for an id made before run ids named their slot. */
export function runSlot(runId: string): number | undefined {
  const slot = SLOTTED_RUN_ID.exec(runId)?.[1];
  return slot === undefined ? undefined : Number.parseInt(slot, 16);
}

/**
 * `run_` and 32 hex digits (`hex`, UUID-shaped: hex 16 holds the variant) as a run id naming `job`'s slot:
 * hex 12 becomes the version 8, hex 13-15 the slot.
 */
export function slottedRunId(hex: string, job: string): string {
  return `run_${hex.slice(0, 12)}8${slotOf(job).toString(16).padStart(3, '0')}${hex.slice(16, 32)}`;
}
