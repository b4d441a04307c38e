import type { Queryable } from '@chronicle/platform';
import type { ShardScope } from './shard-ownership';

/** A pass's write refused: a shard it wrote for was granted to another node (a newer epoch) or given up. */
export class ShardFencedError extends Error {
  constructor(
    readonly node: string,
    readonly shards: readonly number[],
  ) {
    super(`shards ${shards.join(', ')} are no longer held by ${node} under the epochs its pass wrote with`);
    this.name = 'ShardFencedError';
  }
}

/**
 * The fence: in a pass's transaction, before its append, the rows of the shards it writes for, each
 * still this node's under the epoch the pass was given, held FOR KEY SHARE until the transaction
 * ends. A grant to another node takes the row FOR UPDATE, so it waits for (skips, and comes back
 * after) every write made under the old epoch; a write begun after the grant finds the newer epoch
 * and is refused. Renewals and releases do not change the key and do not wait. A pass of a node that
 * stops mid-transaction (SIGSTOP) would hold the rows: PostgreSQL ends its session after a lease's
 * time idle in the transaction, so the shards can be granted.
 */
export async function holdShards(tx: Queryable, scope: ShardScope): Promise<void> {
  if (scope.leases.length === 0) return;
  const { rows } = await tx.query<{ shard: number }>({
    name: 'shards_hold',
    text: `SELECT l.shard, set_config('idle_in_transaction_session_timeout', $4, true) AS idle_limit
             FROM shard_leases l
             JOIN unnest($2::int[], $3::bigint[]) AS m(shard, epoch) ON l.shard = m.shard AND l.epoch = m.epoch
            WHERE l.owner = $1
              FOR KEY SHARE OF l`,
    values: [
      scope.node,
      scope.leases.map((l) => l.shard),
      scope.leases.map((l) => l.epoch),
      `${scope.leaseSeconds * 1000}`,
    ],
  });
  if (rows.length === scope.leases.length) return;
  const held = new Set(rows.map((r) => r.shard));
  throw new ShardFencedError(
    scope.node,
    scope.leases.map((l) => l.shard).filter((shard) => !held.has(shard)),
  );
}
