import { Client } from 'pg';
import { waitFor } from '@chronicle/worker-sdk/testing';
import { startPostgresServers, type PostgresServers } from './postgres-servers';

/** The servers the tests of runs on several servers start: each its own, a crash, a restart, a promoted standby. */
describe('PostgreSQL servers for tests', () => {
  let servers: PostgresServers;

  beforeAll(async () => {
    servers = await startPostgresServers({ primaries: 2, standbyOf: [0], synchronous: true });
  }, 120_000);

  afterAll(() => servers?.close());

  it('keeps each server its own, streams a primary to its standby, and promotes the standby', async () => {
    const [first, second] = servers.primaries;
    const [standby] = servers.standbys;
    await query(first!.url, 'CREATE TABLE acknowledged (n int PRIMARY KEY)');
    await query(first!.url, 'INSERT INTO acknowledged VALUES (1)');
    await query(second!.url, 'CREATE TABLE elsewhere (n int)');
    expect(await query(first!.url, "SELECT to_regclass('elsewhere') AS t")).toEqual([{ t: null }]);

    expect(await query(standby!.url, 'SELECT pg_is_in_recovery() AS standby')).toEqual([{ standby: true }]);
    // Synchronous: a commit the primary acknowledged is on the standby already.
    expect(await query(standby!.url, 'SELECT n FROM acknowledged')).toEqual([{ n: 1 }]);
    await expect(query(standby!.url, 'INSERT INTO acknowledged VALUES (2)')).rejects.toThrow(/read-only/);

    await first!.stop('immediate');
    await expect(query(first!.url, 'SELECT 1')).rejects.toThrow(/ECONNREFUSED/);
    await standby!.promote();
    await waitFor(async () => (await query(standby!.url, 'SELECT pg_is_in_recovery() AS r'))[0]?.r === false, {
      description: 'the standby to leave recovery',
    });
    await query(standby!.url, 'INSERT INTO acknowledged VALUES (2)');
    expect(await query(standby!.url, 'SELECT n FROM acknowledged ORDER BY n')).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it('starts a server stopped at once again with every commit it acknowledged', async () => {
    const second = servers.primaries[1]!;
    await query(second.url, 'CREATE TABLE kept (n int)');
    await query(second.url, 'INSERT INTO kept SELECT generate_series(1, 1000)');
    await second.stop('immediate');
    await second.start();
    expect(await query(second.url, 'SELECT count(*)::int AS n FROM kept')).toEqual([{ n: 1000 }]);
  });
});

async function query(url: string, sql: string): Promise<Record<string, unknown>[]> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return (await client.query(sql)).rows as Record<string, unknown>[];
  } finally {
    await client.end();
  }
}
