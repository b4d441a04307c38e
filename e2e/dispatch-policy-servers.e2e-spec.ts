import { Pool } from 'pg';
import { ApiModule } from '@chronicle/api';
import { shardOf } from '@chronicle/commands';
import { ProjectorModule } from '@chronicle/projector';
import { createTestDatabase } from '@chronicle/testing';
import { startPostgresServers } from '../test/postgres-servers';
import { dispatchPolicySuite } from './support/dispatch-policy.suite';
import { startApp } from './support/start-app';

const SHARDS = 16;

/**
 * The dispatch policy with the runs on three PostgreSQL servers (RUN_SHARD_URLS; shard s on server
 * s mod 3), the definitions, teams and grants in the control database: its shares must hold over the
 * servers, not per server, so each test's jobs are on servers of their own (the suite checks it by the
 * shard map). The projector copies the jobs' definitions, which the claims read for their limits, to
 * every server.
 */
dispatchPolicySuite('dispatch policy over three run servers', {
  // The single database's run floods 100,000 (the claim's cost does not grow with the backlog: the claim
  // suite shows it); here a fifth of that, still forty times what the 10,000 claims of the split take of
  // it, for CI's time (enqueued over three servers, the flood alone took a minute).
  flood: 20_000,
  start: async (adminToken) => {
    const servers = await startPostgresServers({ primaries: 3 });
    const db = await createTestDatabase();
    const pools = servers.primaries.map((s) => new Pool({ connectionString: s.url, max: 2 }));
    for (const pool of pools) pool.on('error', () => undefined);
    const close = async (): Promise<void> => {
      await Promise.all(pools.map((pool) => pool.end().catch(() => undefined)));
      await db.drop();
      await servers.close();
    };
    try {
      const app = await startApp(db.pool, db.eventStore, [ApiModule, ProjectorModule], adminToken, undefined, {
        RUN_SHARD_URLS: servers.primaries.map((s) => s.url).join(','),
        SHARDS: String(SHARDS),
      });
      const { rows } = await db.pool.query<{ shard: number; server: string }>('SELECT shard, server FROM shard_map');
      const serverOfShard = new Map(rows.map((r) => [r.shard, r.server]));
      return {
        app,
        readModels: [db.pool, ...pools],
        logs: [db.log, ...pools],
        serverOf: (job) => serverOfShard.get(shardOf(job, SHARDS))!,
        close: async () => {
          await app.close();
          await close();
        },
      };
    } catch (err) {
      await close();
      throw err;
    }
  },
});
