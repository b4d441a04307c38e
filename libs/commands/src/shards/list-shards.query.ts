import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { CONFIG, PG_POOL, type Config } from '@chronicle/platform';

/** One shard as GET /v1/admin/shards shows it. */
export interface ShardView {
  readonly shard: number;
  /** The scheduler node holding it (`host:pid#instance`); null: free. */
  readonly owner: string | null;
  /** Grants so far: a write under an older one is refused. */
  readonly epoch: number;
  readonly leaseExpiresAt: Date | null;
  readonly lastMaterialisedAt: Date | null;
  readonly lastReapedAt: Date | null;
  /** Runs of the shard that come due within the next minute (waiting now, ready then). */
  readonly dueNextMinute: number;
}

/** Every shard of the deployment, in order, with its owner and the owner's last passes (admin). */
export class ListShards extends Query<ShardView[]> {}

interface ShardRow {
  shard: number;
  owner: string | null;
  epoch: string;
  lease_expires_at: Date | null;
  last_materialised_at: Date | null;
  last_reaped_at: Date | null;
  due_next_minute: number;
}

@QueryHandler(ListShards)
export class ListShardsHandler implements IQueryHandler<ListShards> {
  constructor(
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  async execute(): Promise<ShardView[]> {
    // A shard no node has made a row for yet (no scheduler started) reads as free, epoch 0.
    const { rows } = await this.pool.query<ShardRow>({
      name: 'admin_list_shards',
      text: `WITH due AS (
               SELECT chronicle_shard(r.job, $1) AS shard, count(*)::int AS n FROM ready_runs r
                WHERE r.available_at > now() AND r.available_at <= now() + interval '1 minute'
                GROUP BY 1
             )
             SELECT s.shard, l.owner, coalesce(l.epoch, 0) AS epoch, l.lease_expires_at,
                    l.last_materialised_at, l.last_reaped_at, coalesce(due.n, 0) AS due_next_minute
               FROM generate_series(0, $1 - 1) AS s(shard)
               LEFT JOIN shard_leases l ON l.shard = s.shard
               LEFT JOIN due ON due.shard = s.shard
              ORDER BY s.shard`,
      values: [this.config.shards],
    });
    return rows.map((r) => ({
      shard: r.shard,
      owner: r.owner,
      epoch: Number(r.epoch),
      leaseExpiresAt: r.lease_expires_at,
      lastMaterialisedAt: r.last_materialised_at,
      lastReapedAt: r.last_reaped_at,
      dueNextMinute: r.due_next_minute,
    }));
  }
}
