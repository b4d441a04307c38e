import type { Pool } from 'pg';
import { ConfigError } from '../config/config-error';
import { withTransaction } from './pg-pool';

/** A server runs are kept on: its name in the shard map (`host:port/database`) and its URL. */
export interface RunServerAddress {
  readonly name: string;
  readonly url: string;
}

/** Where each logical shard's runs are (migrations/0031): `servers[placement[shard]]`, under `epochs[shard]`. */
export interface ShardMap {
  readonly servers: readonly RunServerAddress[];
  /** By shard, the index of its server in `servers`. */
  readonly placement: readonly number[];
  readonly epochs: readonly number[];
}

/** A server's name in the map: `host:port/database` of its URL (no user, no password). */
export function runServerName(url: string): string {
  const parsed = new URL(url);
  const host = parsed.hostname || parsed.searchParams.get('host') || 'localhost';
  return `${host}:${parsed.port || '5432'}${parsed.pathname || '/postgres'}`;
}

/**
 * The control database's shard map, placed first if it is empty and `urls` names servers: shard s on
 * the (s mod n)-th of them. Servers named later than the map are added to `run_servers` (a shard moves
 * there by a move, not by a start). Null: no map, every run in the control database.
 */
export async function placeShards(control: Pool, urls: readonly string[], shards: number): Promise<ShardMap | null> {
  return withTransaction(control, async (tx) => {
    // Processes starting together take turns: the second finds the map the first placed.
    await tx.query("SELECT pg_advisory_xact_lock(hashtextextended('shard-map', 0))");
    const names = urls.map(runServerName);
    if (new Set(names).size !== names.length) throw new ConfigError('RUN_SHARD_URLS names a server twice');
    if (urls.length > 0)
      await tx.query(
        `INSERT INTO run_servers (name, url) SELECT * FROM unnest($1::text[], $2::text[])
         ON CONFLICT (name) DO UPDATE SET url = EXCLUDED.url`,
        [names, urls],
      );
    const { rows: placed } = await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM shard_map');
    if (placed[0]!.n === 0 && urls.length > 0)
      await tx.query(
        'INSERT INTO shard_map (shard, server) SELECT s, ($1::text[])[s % $2 + 1] FROM generate_series(0, $3 - 1) s',
        [names, names.length, shards],
      );
    return readShardMap(tx, shards);
  });
}

/** The map as it is (null while empty); refused if it places another number of shards than SHARDS. */
export async function readShardMap(db: Pick<Pool, 'query'>, shards: number): Promise<ShardMap | null> {
  const { rows } = await db.query<{ shard: number; server: string; url: string; epoch: string }>(
    'SELECT m.shard, m.server, s.url, m.epoch FROM shard_map m JOIN run_servers s ON s.name = m.server ORDER BY m.shard',
  );
  if (rows.length === 0) return null;
  if (rows.length !== shards || rows.some((r, i) => r.shard !== i))
    throw new ConfigError(
      `the shard map places ${rows.length} shards, and this process has SHARDS=${shards}; start it with the deployment's SHARDS`,
    );
  const servers: RunServerAddress[] = [];
  const index = new Map<string, number>();
  const placement = rows.map((r) => {
    let i = index.get(r.server);
    if (i === undefined) {
      index.set(r.server, (i = servers.length));
      servers.push({ name: r.server, url: r.url });
    }
    return i;
  });
  return { servers, placement, epochs: rows.map((r) => Number(r.epoch)) };
}
