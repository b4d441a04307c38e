import type { Pool } from 'pg';
import type { RunServer, RunServers } from '@chronicle/commands';
import { type Queryable, withTransaction } from '@chronicle/platform';
import { onEach } from './on-each';
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

/** Holds the fence for a unit of work on a run server, given that unit of work's transaction. */
export type HoldShards = (tx: Queryable) => Promise<void>;

/**
 * `work` on one run server under the fence, whose rows (shard_leases) are in the control database.
 * On the control database, `hold` is holdShards in the transaction `work` gives it (its unit of
 * work): the fence and the append commit together, as in a single database. On another server, a
 * transaction of the control database takes the fence first and keeps it while `work` runs its units
 * of work there, and commits once `work` resolves: a grant of one of the shards to another node waits
 * for the whole of `work`, and a pass begun after the grant is refused before it writes. There `hold`
 * takes the fence again in the control transaction (the rows are held already): each unit of work
 * checks that transaction is still alive before it writes, and keeps it from idling past the limit
 * holdShards sets (idle_in_transaction_session_timeout, a lease) over a long pass.
 */
export async function fenced<T>(
  control: Pool,
  server: RunServer,
  scope: ShardScope,
  work: (hold: HoldShards) => Promise<T>,
): Promise<T> {
  if (server.isControl) return work((tx) => holdShards(tx, scope));
  return withTransaction(control, async (controlTx) => {
    await holdShards(controlTx, scope);
    return work(() => holdShards(controlTx, scope));
  });
}

/**
 * `pass` over the scope's runs on every run server at once (onEach), each under the fence
 * (fenced); resolves with the sum of the runs each decided. A server holds only its own runs: each
 * pass finds them there, given the scope's shards but those being copied to that server by a move
 * (RunServers.arrivingOn), whose runs there are copies until the map places the shard there.
 */
export async function passOnEveryServer(
  servers: RunServers,
  control: Pool,
  scope: ShardScope,
  pass: (server: RunServer, hold: HoldShards, scope: ShardScope) => Promise<number>,
): Promise<number> {
  const decided = await onEach(servers.all, (server) => {
    const arriving = servers.arrivingOn(server);
    const own =
      arriving.length === 0 ? scope : { ...scope, leases: scope.leases.filter((l) => !arriving.includes(l.shard)) };
    return fenced(control, server, scope, (hold) => pass(server, hold, own));
  });
  return decided.reduce((sum, n) => sum + n, 0);
}
