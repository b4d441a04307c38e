import { createHash } from 'node:crypto';

/**
 * The shard of a job (docs/architecture.md, "Shards and scheduler nodes"): the first 32 bits of the
 * MD5 of its name (UTF-8), as an unsigned number, modulo the deployment's shard count. The SQL twin
 * is chronicle_shard (migrations/0021); shard-of.int-spec.ts holds them equal.
 */
export function shardOf(job: string, shards: number): number {
  return createHash('md5').update(job, 'utf8').digest().readUInt32BE(0) % shards;
}
