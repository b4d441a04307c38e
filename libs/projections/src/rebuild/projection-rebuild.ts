import type { Pool } from 'pg';
import { comparePositions, START, type EventStore, type LogPosition } from '@chronicle/event-store';
import { type Queryable, SQLSTATE, sqlStateOf, withTransaction } from '@chronicle/platform';
import { loadCheckpoint, setCheckpoint } from '../checkpoints/projection-checkpoints.sql';
import type { Projection } from '../projection';
import {
  diffTable,
  dropSchema,
  lockLiveTables,
  overlayLiveRows,
  schemaName,
  swapTables,
  type RowDifference,
} from './shadow-tables.sql';
import { ShadowBuild } from './shadow-build';

/** The events in the log, for a progress bar's total (counted up to 100 million). */
export function eventsInLog(store: EventStore): Promise<number> {
  return store.countEventsAfter(START, 100_000_000);
}

/** How far a rebuild or a verification has read the log. */
export interface RebuildProgress {
  readonly phase: 'building' | 'swapping' | 'comparing';
  /** Events read from the log so far. */
  readonly events: number;
}

export interface RebuildOptions {
  /** Events per read of the log. */
  readonly batchSize?: number;
  readonly onProgress?: (progress: RebuildProgress) => void;
  /** The swap waits this long at most for the live tables' locks, then catches up again and retries. */
  readonly lockTimeoutMs?: number;
  readonly swapAttempts?: number;
}

export interface RebuildReport {
  readonly events: number;
  readonly seconds: number;
  readonly position: LogPosition;
}

const DEFAULTS: { batchSize: number; lockTimeoutMs: number; swapAttempts: number } = {
  batchSize: 20_000,
  lockTimeoutMs: 2000,
  swapAttempts: 10,
};
/** The defaults, each overridden by an option given (one left undefined, as a CLI passes it, keeps its default). */
function withDefaults<D extends object>(defaults: D, options: object): D {
  const given = Object.entries(options).filter(([, value]) => value !== undefined);
  return { ...defaults, ...Object.fromEntries(given) };
}

/**
 * Rebuilds one projection without stopping anything: builds it afresh
 * from the log into shadow tables while the live ones keep serving (and
 * claims keep writing them), catches up to the log's head, then swaps the
 * tables in one short transaction: the live tables locked (claims and the
 * projector wait, at most lockTimeoutMs before the rebuild gives way and
 * tries again), the last events applied, the tables exchanged, the
 * checkpoint set to where the rebuild read. The projector's next batch then
 * finds its checkpoint moved and resumes from there.
 */
export async function rebuildProjection(
  store: EventStore,
  pool: Pool,
  projection: Projection,
  options: RebuildOptions = {},
): Promise<RebuildReport> {
  const settings = withDefaults(DEFAULTS, options);
  const started = Date.now();
  return exclusively(pool, `projection-rebuild:${projection.name}`, async () => {
    const shadow = schemaName('rebuild', projection.name);
    const retired = schemaName('retired', projection.name);
    const progress = (phase: RebuildProgress['phase']) => (events: number) => options.onProgress?.({ phase, events });
    const build = new ShadowBuild(store, pool, [projection], () => shadow, settings.batchSize, progress('building'));
    try {
      await build.create();
      await build.fill();
      await build.index();
      // The log read (PostgreSQL's readAll stops before the oldest transaction still running) can end
      // short of rows commands wrote through meanwhile: those are taken from the live tables, once now
      // and, for the rows written since (a margin for transactions that started earlier), under the lock.
      const overlaid = new Date(Date.now() - OVERLAY_MARGIN_MS);
      await overlay(pool, projection, shadow);
      for (let attempt = 1; ; attempt++) {
        let before: { position: LogPosition; events: number } | undefined;
        try {
          await withTransaction(pool, async (tx) => {
            await lockLiveTables(tx, projection.tables, settings.lockTimeoutMs);
            before = await build.catchUpIn(tx);
            await overlay(tx, projection, shadow, overlaid);
            await swapTables(tx, shadow, retired, projection.tables);
            await setCheckpoint(tx, projection.name, projection.version, build.position);
          });
          break;
        } catch (err) {
          if (before !== undefined) build.forget(before);
          if (sqlStateOf(err) !== SQLSTATE.lockNotAvailable || attempt >= settings.swapAttempts) throw err;
          await build.catchUp();
        }
      }
      progress('swapping')(build.events);
      await dropSchema(pool, retired);
      return { events: build.events, seconds: (Date.now() - started) / 1000, position: build.position };
    } finally {
      await dropSchema(pool, shadow);
    }
  });
}

/** How much older than the first overlay a transaction that writes rows through may have begun (updated_at is its start). */
const OVERLAY_MARGIN_MS = 60_000;

async function overlay(db: Queryable, projection: Projection, shadow: string, since?: Date): Promise<void> {
  if (!projection.writtenThrough) return;
  for (const table of projection.tables) await overlayLiveRows(db, shadow, table, since);
}

export interface VerifyReport {
  readonly events: number;
  readonly seconds: number;
  /** Rows that still differed after every comparison round: 0 expected. */
  readonly differences: readonly RowDifference[];
}

export interface VerifyOptions extends RebuildOptions {
  /** Comparison rounds at most; a difference counts only if every round found it. */
  readonly rounds?: number;
  /** Differences listed at most per table. */
  readonly limit?: number;
}

/**
 * Rebuilds every projection into a scratch schema of its own and compares
 * it with the live tables, row by row. The live tables keep moving while
 * this reads, so a row that differs because it changed after the rebuild's
 * read (or because the projector has not applied it yet) is compared again
 * once both sides have caught up: a difference is reported only when every
 * round finds it.
 */
export async function verifyProjections(
  store: EventStore,
  pool: Pool,
  projections: readonly Projection[],
  options: VerifyOptions = {},
): Promise<VerifyReport> {
  const settings = withDefaults({ ...DEFAULTS, rounds: 5, limit: 100 }, options);
  const started = Date.now();
  const build = new ShadowBuild(
    store,
    pool,
    projections,
    (p) => schemaName('verify', p.name),
    settings.batchSize,
    (events) => options.onProgress?.({ phase: 'building', events }),
  );
  return exclusively(pool, 'projection-verify', async () => {
    try {
      await build.create(true);
      await build.fill();
      // No secondary indexes: the comparison joins by primary key (the shadows have theirs), and the
      // scratch tables are dropped afterwards.
      let persistent: Map<string, RowDifference> | undefined;
      for (let round = 1; round <= settings.rounds; round++) {
        await build.catchUp();
        options.onProgress?.({ phase: 'comparing', events: build.events });
        await waitForLiveCheckpoints(pool, projections, build.position);
        const found = new Map<string, RowDifference>();
        // The tables compared at once, each on a connection of its own.
        const compared = projections.flatMap((projection) =>
          projection.tables.map((table) => diffTable(pool, build.schemaOf(projection), table, settings.limit)),
        );
        for (const differences of await Promise.all(compared))
          for (const difference of differences) found.set(`${difference.table}\u0000${difference.key}`, difference);
        persistent = persistent === undefined ? found : new Map([...found].filter(([key]) => persistent!.has(key)));
        if (persistent.size === 0) break;
      }
      return {
        events: build.events,
        seconds: (Date.now() - started) / 1000,
        differences: [...(persistent ?? new Map<string, RowDifference>()).values()],
      };
    } finally {
      await build.dropShadows();
    }
  });
}

/**
 * Until every live projection's checkpoint is at `position` or past it (the projector has applied as
 * much), 10 s at most, and no longer than 1 s without any checkpoint moving (no projector running).
 */
async function waitForLiveCheckpoints(
  pool: Pool,
  projections: readonly Projection[],
  position: LogPosition,
): Promise<void> {
  const deadline = Date.now() + 10_000;
  let [seen, movedAt] = ['', Date.now()];
  while (Date.now() < deadline && Date.now() - movedAt < 1000) {
    const checkpoints = await Promise.all(projections.map((p) => loadCheckpoint(pool, p.name)));
    if (checkpoints.every((c) => c !== undefined && comparePositions(c.position, position) >= 0)) return;
    const now = checkpoints.map((c) => `${c?.position.commit}:${c?.position.prepare}`).join(',');
    if (now !== seen) [seen, movedAt] = [now, Date.now()];
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** `work` while holding a session advisory lock of this name; refused at once if another holds it. */
async function exclusively<T>(pool: Pool, name: string, work: () => Promise<T>): Promise<T> {
  const holder = await pool.connect();
  try {
    const { rows } = await holder.query<{ locked: boolean }>(
      'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked',
      [name],
    );
    if (rows[0]?.locked !== true) throw new Error(`${name} is already running elsewhere`);
    try {
      return await work();
    } finally {
      await holder.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [name]);
    }
  } finally {
    holder.release();
  }
}
