import { createTestDatabase, type TestDatabase } from '@chronicle/testing';
import { ConfigError } from '../config/config-error';
import { placeShards, readShardMap, runServerName } from './shard-map';

describe('the shard map (where each shard keeps its runs)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  it('stays empty without servers: every run in the control database', async () => {
    expect(await placeShards(db.pool, [], 16)).toBeNull();
  });

  it('places shard s on the (s mod n)-th server at the first start that names servers, and keeps it so', async () => {
    const urls = ['postgres://u:secret@db-a:5432/runs', 'postgres://u@db-b/runs', 'postgres://u@db-c:6432/r'];
    const map = await placeShards(db.pool, urls, 8);
    expect(map?.servers.map((s) => s.name)).toEqual(['db-a:5432/runs', 'db-b:5432/runs', 'db-c:6432/r']);
    expect(map?.placement).toEqual([0, 1, 2, 0, 1, 2, 0, 1]);
    expect(map?.epochs).toEqual(Array(8).fill(1));
    // A later start naming other servers adds them, and moves nothing: a shard moves by a move.
    const later = await placeShards(db.pool, ['postgres://u@db-d/runs'], 8);
    expect(later?.placement).toEqual(map?.placement);
    expect((await db.pool.query('SELECT name FROM run_servers ORDER BY name')).rows.map((r) => r.name)).toContain(
      'db-d:5432/runs',
    );
    await expect(readShardMap(db.pool, 16)).rejects.toThrow(ConfigError);
    await expect(readShardMap(db.pool, 16)).rejects.toThrow(/places 8 shards, and this process has SHARDS=16/);
  });

  it('names a server by host, port and database, never by its user or password', () => {
    expect(runServerName('postgres://admin:hunter2@10.0.0.5:5433/runs_a?sslmode=require')).toBe('10.0.0.5:5433/runs_a');
  });
});
