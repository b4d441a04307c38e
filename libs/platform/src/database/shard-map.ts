import { Client, type Pool } from 'pg';
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
  /** By shard, the name of the server it is being copied to (`chronicle shards move`), or null. */
  readonly movingTo: readonly (string | null)[];
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
export async function placeShards(
  control: Pool,
  urls: readonly string[],
  shards: number,
  standbyUrls: readonly string[] = [],
): Promise<ShardMap | null> {
  return withTransaction(control, async (tx) => {
    // Processes starting together take turns: the second finds the map the first placed.
    await tx.query("SELECT pg_advisory_xact_lock(hashtextextended('shard-map', 0))");
    const names = urls.map(runServerName);
    if (new Set(names).size !== names.length) throw new ConfigError('RUN_SHARD_URLS names a server twice');
    if (urls.length > 0)
      await tx.query(
        `INSERT INTO run_servers (name, url, standby_url)
         SELECT name, url, nullif(standby, '') FROM unnest($1::text[], $2::text[], $3::text[]) AS s(name, url, standby)
         ON CONFLICT (name) DO UPDATE SET url = EXCLUDED.url, standby_url = coalesce(EXCLUDED.standby_url, run_servers.standby_url)`,
        [names, urls, urls.map((_, i) => standbyUrls[i] ?? '')],
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
  const { rows } = await db.query<{
    shard: number;
    server: string;
    url: string;
    epoch: string;
    moving_to: string | null;
  }>(
    `SELECT m.shard, m.server, s.url, m.epoch, m.moving_to
       FROM shard_map m JOIN run_servers s ON s.name = m.server ORDER BY m.shard`,
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
  return { servers, placement, epochs: rows.map((r) => Number(r.epoch)), movingTo: rows.map((r) => r.moving_to) };
}

/** What a promotion did: the shards moved to the standby, and whether the old server was reached and fenced. */
export interface Promotion {
  readonly server: string;
  readonly standby: string;
  readonly shards: readonly number[];
  readonly epoch: number;
  readonly oldServerFenced: boolean;
}

/**
 * Failover of a server runs are kept on to its streaming standby: the standby is promoted (a
 * primary from then on), the map places the server's shards on it under an epoch one higher, and the
 * old server is retired and, if it answers, set read-only at once (else by the first process that
 * reaches it when it comes back: fenceRetiredServers). Every process follows the map within a second.
 */
export async function promoteStandby(
  control: Pool,
  server: string,
  standbyUrl: string,
  connect: (url: string) => Promise<Pick<Pool, 'query' | 'end'>> = connectOnce,
): Promise<Promotion> {
  const standby = runServerName(standbyUrl);
  const replica = await connect(standbyUrl);
  try {
    const { rows } = await replica.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby');
    if (rows[0]?.standby === true) await replica.query('SELECT pg_promote(true, 60)');
  } finally {
    await replica.end();
  }
  const moved = await withTransaction(control, async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock(hashtextextended('shard-map', 0))");
    await tx.query(
      'INSERT INTO run_servers (name, url) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET url = EXCLUDED.url, retired_at = NULL, fenced_at = NULL',
      [standby, standbyUrl],
    );
    const { rows } = await tx.query<{ shard: number; epoch: string }>(
      `UPDATE shard_map SET server = $2, epoch = epoch + 1, placed_at = now() WHERE server = $1 RETURNING shard, epoch`,
      [server, standby],
    );
    if (rows.length === 0) throw new ConfigError(`the shard map places no shard on ${server}`);
    await tx.query('UPDATE run_servers SET retired_at = now() WHERE name = $1', [server]);
    return rows;
  });
  const [fenced] = await fenceRetiredServers(control, connect);
  return {
    server,
    standby,
    shards: moved.map((r) => r.shard).sort((a, b) => a - b),
    epoch: Math.max(...moved.map((r) => Number(r.epoch))),
    oldServerFenced: fenced !== undefined && fenced === server,
  };
}

/**
 * The retired servers not fenced yet that answer now, set read-only (ALTER SYSTEM
 * default_transaction_read_only, reloaded): an old primary back after a failover takes no writes from a
 * process that has not read the new map yet. Resolves with the names of those fenced now.
 */
export async function fenceRetiredServers(
  control: Pick<Pool, 'query'>,
  connect: (url: string) => Promise<Pick<Pool, 'query' | 'end'>> = connectOnce,
): Promise<string[]> {
  const { rows } = await control.query<{ name: string; url: string }>(
    'SELECT name, url FROM run_servers WHERE retired_at IS NOT NULL AND fenced_at IS NULL',
  );
  const fenced: string[] = [];
  for (const { name, url } of rows) {
    const old = await connect(url).catch(() => undefined);
    if (old === undefined) continue;
    try {
      await old.query('ALTER SYSTEM SET default_transaction_read_only = on');
      await old.query('SELECT pg_reload_conf()');
      await control.query('UPDATE run_servers SET fenced_at = now() WHERE name = $1', [name]);
      fenced.push(name);
    } catch {
      // Not reached after all, or not allowed (ALTER SYSTEM needs a superuser): tried again later.
    } finally {
      await old.end().catch(() => undefined);
    }
  }
  return fenced;
}

/** One connection to `url`, given up after a second: for a server that may well be down. */
async function connectOnce(url: string): Promise<Pick<Pool, 'query' | 'end'>> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** A server of the map that has a standby to fail over to. */
export interface FailoverCandidate {
  readonly name: string;
  readonly url: string;
  readonly standbyUrl: string;
}

/** The map's servers with a standby named (RUN_SHARD_STANDBY_URLS). */
export async function failoverCandidates(control: Pick<Pool, 'query'>): Promise<FailoverCandidate[]> {
  const { rows } = await control.query<{ name: string; url: string; standby_url: string }>(
    `SELECT DISTINCT s.name, s.url, s.standby_url FROM run_servers s JOIN shard_map m ON m.server = s.name
      WHERE s.standby_url IS NOT NULL ORDER BY s.name`,
  );
  return rows.map((r) => ({ name: r.name, url: r.url, standbyUrl: r.standby_url }));
}

/** Whether the server at `url` answers within a second. */
export async function answers(url: string): Promise<boolean> {
  const client = await connectOnce(url).catch(() => undefined);
  if (client === undefined) return false;
  try {
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}
