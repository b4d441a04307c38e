import type { Pool } from 'pg';
import { START, type EventStore, type LogPosition, type RecordedEvent } from '@chronicle/event-store';
import type { Queryable } from '@chronicle/platform';
import type { Projection } from '../projection';
import { createScratchTables, createShadowTables, dropSchema, indexShadowTables, inSchema } from './shadow-tables.sql';
import { shadowIo, type ShadowIo } from './shadow-io';

/** How long a catch-up waits for committed events its reader cannot see yet. */
const HEAD_WAIT_MS = 30_000;

/**
 * Builds projections afresh from the log into shadow tables, each projection
 * in a schema of its own, from one reader of the log. Its `apply` runs
 * unchanged with the shadow schema first in the search path.
 */
export class ShadowBuild {
  position: LogPosition = START;
  events = 0;

  constructor(
    private readonly store: EventStore,
    private readonly pool: Pool,
    readonly projections: readonly Projection[],
    readonly schemaOf: (projection: Projection) => string,
    private readonly batchSize: number,
    private readonly onProgress: (events: number) => void,
  ) {}

  /** The shadows, empty; `scratch` ones (a verification's, never swapped in) are unlogged. */
  async create(scratch = false): Promise<void> {
    for (const projection of this.projections) {
      await createShadowTables(this.pool, this.schemaOf(projection), projection.tables, scratch);
      await createScratchTables(this.pool, this.schemaOf(projection), projection.sideTables ?? []);
    }
  }

  /**
   * Reads to the log's head, each batch applied to every shadow in a transaction of its own. The
   * head is the store's count of events after the position, not the end of a read: PostgreSQL's
   * reader stops short of events committed after the oldest transaction still running on the
   * server, so it waits for those (up to `HEAD_WAIT_MS`; the overlay and the projector's resuming
   * from the checkpoint cover what it still could not read).
   */
  async catchUp(): Promise<void> {
    const deadline = Date.now() + HEAD_WAIT_MS;
    const apply = (projection: Projection, events: RecordedEvent[]): Promise<void> =>
      inSchema(this.pool, this.schemaOf(projection), (tx) => projection.apply(tx, events));
    await this.readToHead(apply);
    while ((await this.store.countEventsAfter(this.position, 1)) > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      await this.readToHead(apply);
    }
  }

  /**
   * The first read, into the empty shadows: through each projection's bulk build where it has one
   * (rows folded in memory over batches, written in bulk, all written by the end), then catchUp().
   */
  async fill(): Promise<void> {
    const builds = new Map(
      this.projections.map((p) => [
        p,
        p.bulkBuild === undefined ? undefined : { build: p.bulkBuild(), io: this.io(p) },
      ]),
    );
    const read = (async () => {
      // The projections of a batch at once: each has tables, transactions and memory of its own (what
      // run-activity reads of runs is the live table), so one's wait for the server is another's turn.
      const concurrently = true;
      await this.readToHead(async (projection, events) => {
        const bulk = builds.get(projection);
        if (bulk === undefined)
          await inSchema(this.pool, this.schemaOf(projection), (tx) => projection.apply(tx, events));
        else await bulk.build.add(bulk.io, events);
      }, concurrently);
      await Promise.all([...builds.values()].map((bulk) => bulk?.build.flush(bulk.io)));
    })();
    // Every write finished (or failed) before anything else touches the shadows, whatever happened;
    // drained() once the reading is over, when nothing more is queued.
    const [reading] = await Promise.allSettled([read]);
    const writes = await Promise.allSettled([...builds.values()].map((bulk) => bulk?.io.drained()));
    const failed = [reading!, ...writes].find((r) => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    await this.catchUp();
  }

  private io(projection: Projection): ShadowIo {
    return shadowIo(this.pool, this.schemaOf(projection));
  }

  /**
   * Reads to the log's head applying in `tx` (whose search path is the
   * caller's to set): if `tx` rolls back, call forget() with what this resolved.
   */
  async catchUpIn(tx: Queryable): Promise<{ position: LogPosition; events: number }> {
    const before = { position: this.position, events: this.events };
    await this.readToHead(async (projection, events) => {
      await tx.query(`SET LOCAL search_path TO ${this.schemaOf(projection)}, public`);
      await projection.apply(tx, events);
    });
    await tx.query('SET LOCAL search_path TO public');
    return before;
  }

  /** Back to where catchUpIn started: its transaction rolled back. */
  forget(before: { position: LogPosition; events: number }): void {
    this.position = before.position;
    this.events = before.events;
  }

  /** The live tables' indexes on the shadows, once most rows are in. */
  async index(): Promise<void> {
    // A table's indexes one after another, the tables at once: each build is one core's sort.
    await Promise.all(
      this.projections.flatMap((projection) =>
        projection.tables.map((table) => indexShadowTables(this.pool, this.schemaOf(projection), [table])),
      ),
    );
  }

  async dropShadows(): Promise<void> {
    for (const projection of this.projections) await dropSchema(this.pool, this.schemaOf(projection));
  }

  private async readToHead(
    apply: (projection: Projection, events: RecordedEvent[]) => Promise<void>,
    concurrently = false,
  ): Promise<void> {
    const read = (from: LogPosition) => this.store.readAll({ from, maxCount: this.batchSize });
    let next = read(this.position);
    while (true) {
      const batch = await next;
      if (batch.length === 0) return;
      // The next page is read while this one is applied: the store and the projections work at once.
      next = read(batch[batch.length - 1]!.position);
      try {
        const applied: Array<Promise<void>> = [];
        for (const projection of this.projections) {
          const types = projection.eventTypes;
          const relevant = types === 'all' ? [...batch] : batch.filter((e) => types.has(e.type));
          if (relevant.length === 0) continue;
          const applying = apply(projection, relevant);
          applied.push(applying);
          if (!concurrently) await applying;
        }
        const results = await Promise.allSettled(applied);
        const failed = results.find((r) => r.status === 'rejected');
        if (failed !== undefined) throw failed.reason;
      } catch (err) {
        next.catch(() => undefined); // not looked at any more
        throw err;
      }
      this.position = batch[batch.length - 1]!.position;
      this.events += batch.length;
      this.onProgress(this.events);
    }
  }
}
