import { writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import type { Pool } from 'pg';
import { PENDING_RUN_STATES } from '@chronicle/domain';
import { runSlot, shardOf } from '@chronicle/commands';
import { type EventStore, PostgresEventStore, START, type LogPosition } from '@chronicle/event-store';
import { createPool, readShardMap, runServerName, type ShardMap } from '@chronicle/platform';
import { runServerProjections, verifyProjections } from '@chronicle/projections';
import { startPostgresServers, type PostgresServer, type PostgresServers } from '../../test/postgres-servers';
import type { ServerEvent, ServerLog } from './server-phase-checks';

/** Silence of the server with a standby after which a scheduler node promotes the standby. */
export const FAILOVER_SECONDS = 5;

/**
 * The chaos run's run servers (docs/sharding.md): the control database, then two clusters of their
 * own (test/postgres-servers.ts), the second with a synchronous streaming standby, as
 * e2e/run-server-failover.e2e-spec.ts has it. Every process of the fleet gets them in RUN_SHARD_URLS
 * (the control database first: shard s on the (s mod 3)-th at the first start), the standby in
 * RUN_SHARD_STANDBY_URLS and SHARD_FAILOVER_SECONDS, so the scheduler nodes fail over by themselves.
 * The harness reads the servers as the shard map names them: the map changes under the run.
 */
export class ChaosRunServers {
  /** Pools on the map's servers but the control database, by URL. */
  private readonly pools = new Map<string, Pool>();

  private constructor(
    private readonly clusters: PostgresServers,
    private readonly control: { readonly url: string; readonly pool: Pool },
    readonly shards: number,
  ) {}

  static async start(controlUrl: string, shards: number): Promise<ChaosRunServers> {
    const clusters = await startPostgresServers({ primaries: 2, standbyOf: [1], synchronous: true });
    const pool = createPool({ connectionString: controlUrl, max: 2, applicationName: 'chaos-shard-map' });
    return new ChaosRunServers(clusters, { url: controlUrl, pool }, shards);
  }

  /** The server without a standby: stopped at once and started again. */
  get killed(): PostgresServer {
    return this.clusters.primaries[0]!;
  }

  /** The server with the standby: killed and left down, its standby promoted. */
  get failing(): PostgresServer {
    return this.clusters.primaries[1]!;
  }

  get standby(): PostgresServer {
    return this.clusters.standbys[0]!;
  }

  /** What every process of the fleet is started with. */
  get env(): Record<string, string> {
    return {
      RUN_SHARD_URLS: [this.control.url, this.killed.url, this.failing.url].join(','),
      RUN_SHARD_STANDBY_URLS: `,,${this.standby.url}`,
      SHARD_FAILOVER_SECONDS: String(FAILOVER_SECONDS),
    };
  }

  /** The servers, for the run's log. */
  describe(): string {
    const [a, b, standby] = [this.killed, this.failing, this.standby].map((s) => this.nameOf(s));
    return `the control database, ${a} and ${b} (synchronous standby ${standby}; failover after ${FAILOVER_SECONDS} s)`;
  }

  /** A server's name in the shard map. */
  nameOf(server: PostgresServer | string): string {
    return runServerName(typeof server === 'string' ? server : server.url);
  }

  /** A job name (`<prefix>-<n>`, the first n that fits) whose shard the first start places on the `index`-th server of `env`. */
  jobOnServer(index: number, prefix: string): string {
    for (let n = 0; ; n++) if (shardOf(`${prefix}-${n}`, this.shards) % 3 === index) return `${prefix}-${n}`;
  }

  shardOfJob(job: string): number {
    return shardOf(job, this.shards);
  }

  /** The shard of a run, from the slot its id names (docs/sharding.md). */
  shardOfRun(runId: string): number | undefined {
    const slot = runSlot(runId);
    return slot === undefined ? undefined : slot % this.shards;
  }

  /** The shard map as the control database has it now. */
  async map(): Promise<ShardMap> {
    const map = await readShardMap(this.control.pool, this.shards);
    if (map === null) throw new Error('the control database has no shard map: RUN_SHARD_URLS was not applied');
    return map;
  }

  /** The shards the map places on the server named `name`. */
  static shardsOn(map: ShardMap, name: string): number[] {
    return map.placement.flatMap((server, shard) => (map.servers[server]!.name === name ? [shard] : []));
  }

  /** Runs due before `end` still waiting or leased, over the map's servers; -1 while one does not answer. */
  async pendingRunsDue(end: Date): Promise<number> {
    try {
      const map = await this.map();
      const counts = await Promise.all(
        map.servers.map(async ({ url }) => {
          const { rows } = await this.poolOf(url).query<{ n: number }>(
            'SELECT count(*)::int AS n FROM runs WHERE state = ANY($1::text[]) AND due_at < $2',
            [PENDING_RUN_STATES, end],
          );
          return rows[0]!.n;
        }),
      );
      return counts.reduce((a, b) => a + b, 0);
    } catch {
      return -1;
    }
  }

  /** Each run stream's last revision on `server` now: what it has committed. */
  async committedOn(server: PostgresServer): Promise<Map<string, bigint>> {
    const { rows } = await this.poolOf(server.url).query<{ stream_id: string; revision: string }>(
      `SELECT es_stream_name(stream_key) AS stream_id, max(stream_revision)::text AS revision FROM events
        WHERE es_stream_name(stream_key) LIKE 'run-%' GROUP BY stream_key`,
    );
    return new Map(rows.map((r) => [r.stream_id, BigInt(r.revision)]));
  }

  /**
   * The log of every server the map names now: the control database's read by `controlLog` (its log
   * may be a database of its own), the others' through the event-store port on their `events`.
   */
  async readLogs(controlLog: () => Promise<readonly ServerEvent[]>): Promise<{ map: ShardMap; logs: ServerLog[] }> {
    const map = await this.map();
    const logs = await Promise.all(
      map.servers.map(async ({ name, url }) => ({
        server: name,
        events:
          url === this.control.url ? await controlLog() : await readEvents(new PostgresEventStore(this.poolOf(url))),
      })),
    );
    return { map, logs };
  }

  /** The server the map places the run of stream `streamId` on; undefined for another stream. */
  static holderOf(map: ShardMap, shards: number, streamId: string): string | undefined {
    if (!streamId.startsWith('run-')) return undefined;
    const slot = runSlot(streamId.slice('run-'.length));
    return slot === undefined ? undefined : map.servers[map.placement[slot % shards]!]!.name;
  }

  /**
   * Each server's read models but the control database's (chaos.ts compares those) against a rebuild:
   * its runs' rows from its own log, its copy of the `jobs` rows from the control log.
   */
  async compareWithRebuild(controlStore: EventStore): Promise<string[]> {
    const differences: string[] = [];
    const control = { pool: this.control.pool, eventStore: controlStore };
    for (const { name, url } of (await this.map()).servers) {
      if (url === this.control.url) continue;
      const pool = this.poolOf(url);
      for (const { store, projections } of runServerProjections(control, {
        name,
        pool,
        eventStore: new PostgresEventStore(pool),
      })) {
        const report = await verifyProjections(store, pool, projections);
        differences.push(...report.differences.map((d) => `${name}: ${JSON.stringify(d).slice(0, 300)}`));
      }
    }
    return differences;
  }

  /** Each cluster's server log into `dir`, for a run that failed. */
  async keepLogs(dir: string): Promise<void> {
    for (const server of [...this.clusters.primaries, ...this.clusters.standbys])
      await writeFile(path.join(dir, `pg-${server.name}.log`), await server.log());
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values(), this.control.pool].map((p) => p.end().catch(() => undefined)));
    await this.clusters.close();
  }

  private poolOf(url: string): Pool {
    if (url === this.control.url) return this.control.pool;
    let pool = this.pools.get(url);
    if (pool === undefined) {
      pool = createPool({ connectionString: url, max: 2, applicationName: 'chaos-observer' });
      this.pools.set(url, pool);
    }
    return pool;
  }
}

/** Every event of a log, through the event-store port. */
export async function readEvents(store: EventStore): Promise<ServerEvent[]> {
  const events: ServerEvent[] = [];
  for (let from: LogPosition = START; ;) {
    const page = await store.readAll({ from, maxCount: 5_000 });
    if (page.length === 0) return events;
    for (const e of page)
      events.push({
        id: e.id,
        streamId: e.streamId,
        revision: e.revision,
        type: e.type,
        data: e.data as Record<string, unknown>,
      });
    from = page[page.length - 1]!.position;
  }
}
