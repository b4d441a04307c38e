import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Client, type Pool } from 'pg';
import { ConfigError, withTransaction, type Queryable } from '@chronicle/platform';

/** A shard this node holds, under the epoch of its grant. */
export interface ShardLease {
  readonly shard: number;
  readonly epoch: number;
}

/** What a scheduler pass may write for: the node's shards, each under its epoch (see holdShards). */
export interface ShardScope {
  readonly node: string;
  /** The deployment's shard count (SHARDS): a job's shard is chronicle_shard(job, shardCount). */
  readonly shardCount: number;
  readonly leases: readonly ShardLease[];
  /** How long a lease lasts unrenewed: a pass's transaction may not stay idle longer (holdShards). */
  readonly leaseSeconds: number;
}

/** What one refresh changed. */
export interface OwnershipChange {
  /** Newly granted, each under a new epoch: run the reaper and the materialiser for them first. */
  readonly granted: readonly ShardLease[];
  /** Taken over by another node while this one did not renew (a pause past the lease). */
  readonly lost: readonly number[];
  /** Given up for a node that joined (the shards are spread evenly over the live nodes). */
  readonly released: readonly number[];
}

/** The first key of a node's presence lock (pg_advisory_lock(class, hashtext(node))): 'SHND'. */
const PRESENCE_LOCK_CLASS = 0x53484e44;
/** How long a node must have held its own presence before it judges others gone by theirs. */
const PRESENCE_SETTLED_MS = 3_000;
/** Nodes renew every second: one silent this long, with no presence, is gone (its lease is not waited out). */
const GONE_AFTER_SILENCE = '2 seconds';

/** A node's name as shards' owners show it: host and process, and an instance (a pid is reused). */
export function schedulerNodeName(): string {
  return `${hostname()}:${process.pid}#${randomBytes(2).toString('hex')}`;
}

/**
 * A scheduler node's hold on its shards (docs/architecture.md, "Shards and
 * scheduler nodes"): leases in PostgreSQL with an owner, an epoch and an
 * expiry, renewed each refresh (well within the lease), spread evenly over
 * the live nodes. A lease that ran out is granted
 * to another node with its epoch one higher, and the writes of the old owner,
 * made under the older epoch, are then refused (holdShards).
 *
 * Each refresh: say this node is alive; renew what it holds; give up what is
 * over its share; take free or expired shards up to its share. The share of
 * the i-th live node (by name) is floor(S/N), one more for the first S mod N.
 *
 * With `presence`, a node also holds a session lock on a connection of its own for as long as it
 * lives. A node that died (killed, crashed: its connections closed) loses that lock at once, so the
 * others take its shards and stop counting it at their next refresh, once it has also been silent
 * for two seconds, instead of a lease later. A node that is alive but stalled (SIGSTOP, a long GC)
 * keeps its connection, so its shards wait for the lease to run out. A presence lost while the node
 * lives (PostgreSQL restarted) can at worst hand its shards over early: its writes are then fenced
 * as after any takeover, and the shards spread again.
 */
export class ShardOwnership {
  private readonly held = new Map<number, number>();
  /** Granted, not yet served: the reaper and the materialiser run for them first (takeoverScope). */
  private readonly warming = new Set<number>();

  /** The connection holding this node's presence lock, and since when (this process's clock). */
  private presence: { client: Client; since: number } | undefined;

  constructor(
    private readonly pool: Pool,
    readonly node: string,
    readonly shardCount: number,
    private readonly leaseSeconds: number,
    private readonly options: { presence?: boolean } = {},
  ) {}

  /**
   * Agrees the shard count with the deployment's (recorded by the first node), and makes a row per
   * shard. Another count is taken only while no node holds a live lease: the job-to-shard map
   * changes with it.
   */
  async start(): Promise<void> {
    await withTransaction(this.pool, async (tx) => {
      await tx.query('INSERT INTO shard_settings (shards) VALUES ($1) ON CONFLICT (only_row) DO NOTHING', [
        this.shardCount,
      ]);
      const { rows } = await tx.query<{ shards: number }>('SELECT shards FROM shard_settings FOR UPDATE');
      const recorded = rows[0]!.shards;
      if (recorded !== this.shardCount) {
        const { rows: live } = await tx.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM shard_leases WHERE owner IS NOT NULL AND lease_expires_at > now()`,
        );
        if (live[0]!.n > 0)
          throw new ConfigError(
            `SHARDS is ${this.shardCount} but this deployment has ${recorded} shards, ${live[0]!.n} of them held by ` +
              `running scheduler nodes: start it with SHARDS=${recorded}, or stop every scheduler node to change it`,
          );
        await tx.query('UPDATE shard_settings SET shards = $1, changed_at = now()', [this.shardCount]);
        // Rows past the new count stay (their epochs with them), unused and free.
        await tx.query('UPDATE shard_leases SET owner = NULL, lease_expires_at = NULL WHERE shard >= $1', [
          this.shardCount,
        ]);
      }
      await tx.query(
        'INSERT INTO shard_leases (shard) SELECT generate_series(0, $1 - 1) ON CONFLICT (shard) DO NOTHING',
        [this.shardCount],
      );
    });
  }

  /** The shards served now, each under its epoch: what the regular passes write for. */
  scope(): ShardScope {
    return this.scopeOf([...this.held.keys()].filter((shard) => !this.warming.has(shard)));
  }

  /** The shards granted and not yet served, for the passes a new owner runs first. */
  takeoverScope(): ShardScope {
    return this.scopeOf([...this.warming].filter((shard) => this.held.has(shard)));
  }

  /** The shards of a takeover passed through the reaper and the materialiser: served from now on. */
  serve(scope: ShardScope): void {
    for (const { shard } of scope.leases) this.warming.delete(shard);
  }

  private scopeOf(shards: readonly number[]): ShardScope {
    return {
      node: this.node,
      shardCount: this.shardCount,
      leases: shards.map((shard) => ({ shard, epoch: this.held.get(shard)! })).sort((a, b) => a.shard - b.shard),
      leaseSeconds: this.leaseSeconds,
    };
  }

  /** Record that the scope's shards went through the reaper (and the materialiser): GET /v1/admin/shards. */
  async passed(scope: ShardScope, materialised: boolean): Promise<void> {
    if (scope.leases.length === 0) return;
    await this.pool.query({
      name: 'shards_passed',
      text: `UPDATE shard_leases SET last_reaped_at = now(),
                    last_materialised_at = CASE WHEN $3 THEN now() ELSE last_materialised_at END
              WHERE owner = $1 AND shard = ANY($2::int[])`,
      values: [this.node, scope.leases.map((l) => l.shard), materialised],
    });
  }

  /** One round: alive, renew, give up the excess, take up to this node's share. */
  async refresh(): Promise<OwnershipChange> {
    const ttl = `${this.leaseSeconds} seconds`;
    const judgesPresence = this.options.presence === true && (await this.holdPresence());
    await this.pool.query({
      name: 'shards_node_alive',
      text: `INSERT INTO scheduler_nodes (node) VALUES ($1) ON CONFLICT (node) DO UPDATE SET last_seen = now()`,
      values: [this.node],
    });
    // Renewed: what this node still owns (a lease that ran out but no other node took is still its own:
    // no newer epoch was granted).
    const { rows: renewed } = await this.pool.query<{ shard: number; epoch: string }>({
      name: 'shards_renew',
      text: `UPDATE shard_leases SET lease_expires_at = now() + $2::interval
              WHERE owner = $1 AND shard < $3 RETURNING shard, epoch`,
      values: [this.node, ttl, this.shardCount],
    });
    const still = new Map(renewed.map((r) => [r.shard, Number(r.epoch)]));
    const lost = [...this.held.keys()].filter((shard) => still.get(shard) !== this.held.get(shard));
    for (const shard of lost) {
      this.held.delete(shard);
      this.warming.delete(shard);
    }

    const share = await this.share(ttl, judgesPresence);
    const released = [...this.held.keys()].sort((a, b) => b - a).slice(0, Math.max(0, this.held.size - share));
    if (released.length > 0) {
      // Out of the scope first, so that no pass of this node starts on them; one under way keeps its hold.
      for (const shard of released) {
        this.held.delete(shard);
        this.warming.delete(shard);
      }
      await release(this.pool, this.node, released);
    }
    const granted = this.held.size < share ? await this.grant(share - this.held.size, ttl, judgesPresence) : [];
    for (const lease of granted) {
      this.held.set(lease.shard, lease.epoch);
      this.warming.add(lease.shard);
    }
    return { granted, lost, released };
  }

  /** Gives every shard up (a node that stops): the other nodes take them at their next refresh. */
  async stop(): Promise<void> {
    const shards = [...this.held.keys()];
    this.held.clear();
    this.warming.clear();
    try {
      await release(this.pool, this.node, shards);
      await this.pool.query('DELETE FROM scheduler_nodes WHERE node = $1', [this.node]);
    } finally {
      const presence = this.presence;
      this.presence = undefined;
      await presence?.client.end().catch(() => undefined);
    }
  }

  /**
   * This node's presence lock, taken again if its connection was lost. Resolves whether it has been
   * held long enough (PRESENCE_SETTLED_MS) for this node to judge the others' (after a restart of
   * PostgreSQL every node takes its lock again within a refresh or two).
   */
  private async holdPresence(): Promise<boolean> {
    if (this.presence === undefined) {
      const client = new Client({
        ...this.pool.options,
        application_name: `${this.pool.options.application_name ?? 'scheduler'}-presence`,
      });
      let ended = false;
      const lost = (): void => {
        if (this.presence?.client === client) this.presence = undefined;
        if (!ended) void client.end().catch(() => undefined);
        ended = true;
      };
      client.on('error', lost);
      client.on('end', lost);
      await client.connect();
      const { rows } = await client.query<{ held: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS held', [
        PRESENCE_LOCK_CLASS,
        this.node,
      ]);
      // Not held: another node's name hashes alike (rare); this node is then judged by its lease alone.
      if (rows[0]?.held !== true) {
        await client.end();
        return false;
      }
      this.presence = { client, since: Date.now() };
    }
    return Date.now() - this.presence.since >= PRESENCE_SETTLED_MS;
  }

  /** This node's share of the shards among the live nodes: seen within a lease (and present, or just seen). */
  private async share(ttl: string, judgesPresence: boolean): Promise<number> {
    const { rows } = await this.pool.query<{ node: string }>({
      name: 'shards_live_nodes',
      text: `${PRESENT_NODES}
             SELECT node FROM scheduler_nodes
              WHERE last_seen > now() - $1::interval
                AND (NOT $2 OR node = $3 OR last_seen > now() - $4::interval
                     OR (hashtext(node)::bigint & 4294967295) IN (SELECT key FROM present))
              ORDER BY node COLLATE "C"`,
      values: [ttl, judgesPresence, this.node, GONE_AFTER_SILENCE],
    });
    const nodes = rows.map((r) => r.node);
    const index = Math.max(0, nodes.indexOf(this.node));
    const count = Math.max(1, nodes.length);
    return Math.floor(this.shardCount / count) + (index < this.shardCount % count ? 1 : 0);
  }

  /**
   * Up to `wanted` free or expired shards (or of an owner gone: silent, no presence), each under its
   * next epoch. SKIP LOCKED passes over a shard whose old owner still writes under it (its pass holds
   * the row FOR KEY SHARE): taken once that ends.
   */
  private async grant(wanted: number, ttl: string, judgesPresence: boolean): Promise<ShardLease[]> {
    const { rows } = await this.pool.query<{ shard: number; epoch: string }>({
      name: 'shards_grant',
      text: `${PRESENT_NODES},
             free AS (
               SELECT shard FROM shard_leases
                WHERE shard < $3
                  AND (owner IS NULL OR lease_expires_at <= now()
                       OR ($5 AND lease_expires_at <= now() + $2::interval - $6::interval
                           AND (hashtext(owner)::bigint & 4294967295) NOT IN (SELECT key FROM present)))
                ORDER BY shard
                LIMIT $4
                  FOR UPDATE SKIP LOCKED
             )
             UPDATE shard_leases l
                SET owner = $1, epoch = l.epoch + 1, lease_expires_at = now() + $2::interval, granted_at = now()
               FROM free WHERE l.shard = free.shard
             RETURNING l.shard, l.epoch`,
      values: [this.node, ttl, this.shardCount, wanted, judgesPresence, GONE_AFTER_SILENCE],
    });
    return rows.map((r) => ({ shard: r.shard, epoch: Number(r.epoch) })).sort((a, b) => a.shard - b.shard);
  }
}

/** The presence locks held in this database, by the second key (hashtext(node), as pg_locks shows it: unsigned). */
const PRESENT_NODES = `WITH present AS MATERIALIZED (
  SELECT objid::bigint AS key FROM pg_locks
   WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid = ${PRESENCE_LOCK_CLASS}
     AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
)`;

async function release(db: Queryable, node: string, shards: readonly number[]): Promise<void> {
  if (shards.length === 0) return;
  await db.query({
    name: 'shards_release',
    text: `UPDATE shard_leases SET owner = NULL, lease_expires_at = NULL WHERE owner = $1 AND shard = ANY($2::int[])`,
    values: [node, shards],
  });
}

/** The scope of a node alone in its database (tests, the bench): it starts, and is granted every shard. */
export async function soleNodeScope(pool: Pool, shardCount = 16, leaseSeconds = 60): Promise<ShardScope> {
  const ownership = new ShardOwnership(pool, schedulerNodeName(), shardCount, leaseSeconds);
  await ownership.start();
  await ownership.refresh();
  ownership.serve(ownership.takeoverScope());
  return ownership.scope();
}
