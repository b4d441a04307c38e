import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { migrate } from '@chronicle/platform';
import { createEmptyDatabase, migrationsBefore } from '@chronicle/testing';
import { WrongExpectedRevisionError } from '../event-store.errors';
import { START } from '../event-store.port';
import { PostgresEventStore } from './postgres.event-store';

/**
 * migrations/0049 keeps each stream by a key of bytes: a log written before it must read back the same
 * streams, by the same names, in the same order, and go on appending to them.
 */
describe('migration 0049 (stream keys) on a log with events', () => {
  let db: Awaited<ReturnType<typeof createEmptyDatabase>>;
  const pools: Pool[] = [];
  const hex = '019ad3c0f1a28e3b9c4d5e6f70819a2b';
  const streams = {
    run: `run-run_${hex}`, // a run id of today: kept in 17 bytes
    upper: `run-run_${hex.toUpperCase()}`, // not canonical: kept as written
    older: 'run-run_Zx3-kQ9aB_c7dE2fG1hJ4kL', // a derived id of an older form
    job: 'job-ops.sync',
  };

  beforeAll(async () => {
    db = await createEmptyDatabase();
    await migrate(db.url, await migrationsBefore('0049'));
  });
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
    await db?.drop();
  });

  it('reads every stream back by its name, in order, and appends after each head', async () => {
    const before = new Pool({ connectionString: db.url, max: 1 });
    pools.push(before);
    // Appended as the adapter of the log before did: es_append with names alone.
    for (const streamId of Object.values(streams))
      await before.query(`SELECT * FROM es_append(ARRAY[$1], ARRAY[-1]::bigint[], ARRAY[$2::uuid], $3::json)`, [
        streamId,
        randomUUID(),
        JSON.stringify([
          { s: 1, n: 0, id: randomUUID(), type: 'First', data: {} },
          { s: 1, n: 1, id: randomUUID(), type: 'Second', data: { n: 2 }, actor: 'team:ops', team: 'ops' },
        ]),
      ]);
    const { rows: logBefore } = await before.query<{ stream: string; revision: string; type: string }>(
      'SELECT stream_id AS stream, stream_revision::text AS revision, event_type AS type FROM events ORDER BY global_position',
    );

    expect(await migrate(db.url)).toContain(49);

    const pool = new Pool({ connectionString: db.url, max: 2 });
    pools.push(pool);
    const after = new PostgresEventStore(pool);
    expect(
      (await after.readAll({ from: START, maxCount: 100 })).map((e) => ({
        stream: e.streamId,
        revision: e.revision.toString(),
        type: e.type,
      })),
    ).toEqual(logBefore);
    for (const streamId of Object.values(streams)) {
      expect((await after.readStream(streamId)).map((e) => e.type)).toEqual(['First', 'Second']);
      const [appended] = await after.appendToStreams([
        { streamId, expected: 1n, events: [{ type: 'Third', data: {} }] },
      ]);
      expect(appended).toMatchObject({ streamId, nextRevision: 2n });
      expect(await after.findEvents({ streamId, maxCount: 10 })).toHaveLength(3);
    }
    const keys = await pool.query<{ name: string; bytes: number }>(
      'SELECT DISTINCT es_stream_name(stream_key) AS name, length(stream_key) AS bytes FROM events ORDER BY 1',
    );
    expect(keys.rows).toEqual(
      Object.values(streams)
        .sort()
        .map((name) => ({ name, bytes: name === streams.run ? 17 : Buffer.byteLength(name) })),
    );
    // An expected revision is still checked against the stream's head.
    await expect(after.appendToStream(streams.run, 0n, [{ type: 'Late', data: {} }])).rejects.toBeInstanceOf(
      WrongExpectedRevisionError,
    );
  });
});
