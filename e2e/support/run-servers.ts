import { Client } from 'pg';
import { shardOf } from '@chronicle/commands';

/** A job name (`<prefix>-<n>`, the first n that fits) of `shard` of `shards`. */
export function jobOfShard(shard: number, shards: number, prefix = 'billing.job'): string {
  for (let i = 0; ; i++) if (shardOf(`${prefix}-${i}`, shards) === shard) return `${prefix}-${i}`;
}

/** The first column of `sql`'s rows on the database at `url`, read on a connection of its own. */
export async function column(url: string, sql: string, values: readonly unknown[] = []): Promise<unknown[]> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query<{ v: unknown }>(sql, [...values])).rows.map((r) => r.v);
  } finally {
    await client.end().catch(() => undefined);
  }
}
