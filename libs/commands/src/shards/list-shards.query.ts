import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { CONFIG, PG_POOL, type Config } from '@chronicle/platform';
import { addUpPerKey } from './add-up-per-key';
import { RunServers } from './run-servers';

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
  /** The server its runs are on: its name in the shard map (`host:port/database`), `control` without one. */
  readonly server: string;
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
}

interface DueRow {
  shard: number;
  n: number;
}

@QueryHandler(ListShards)
export class ListShardsHandler implements IQueryHandler<ListShards> {
  constructor(
    @Inject(PG_POOL) private readonly pool: Pool,
    private readonly servers: RunServers,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  async execute(): Promise<ShardView[]> {
    // The leases are the control database's; the waiting runs are counted on every server and added up
    // per shard (a shard's runs are on its server, and those made before the map in the control database).
    const [{ rows }, answers] = await Promise.all([
      // A shard no node has made a row for yet (no scheduler started) reads as free, epoch 0.
      this.pool.query<ShardRow>({
        name: 'admin_list_shards',
        text: `SELECT s.shard, l.owner, coalesce(l.epoch, 0) AS epoch, l.lease_expires_at,
                      l.last_materialised_at, l.last_reaped_at
                 FROM generate_series(0, $1 - 1) AS s(shard)
                 LEFT JOIN shard_leases l ON l.shard = s.shard
                ORDER BY s.shard`,
        values: [this.config.shards],
      }),
      this.servers.answering(async (server) => {
        const { rows: due } = await server.pool.query<DueRow>({
          name: 'admin_shards_due_next_minute',
          text: `SELECT chronicle_shard(job, $1) AS shard, count(*)::int AS n FROM ready_runs
                    WHERE available_at > now() AND available_at <= now() + interval '1 minute'
                    GROUP BY 1`,
          values: [this.config.shards],
        });
        return due;
      }),
    ]);
    const due = new Map(
      addUpPerKey(
        answers,
        (row) => row.shard,
        (a, b) => ({ shard: a.shard, n: a.n + b.n }),
      ).map((r) => [r.shard, r.n]),
    );
    return rows.map((r) => ({
      shard: r.shard,
      owner: r.owner,
      epoch: Number(r.epoch),
      leaseExpiresAt: r.lease_expires_at,
      lastMaterialisedAt: r.last_materialised_at,
      lastReapedAt: r.last_reaped_at,
      dueNextMinute: due.get(r.shard) ?? 0,
      server: this.servers.ofShard(r.shard).name,
    }));
  }
}
