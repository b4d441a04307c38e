import { Inject, Injectable } from '@nestjs/common';
import type { Pool } from 'pg';
import {
  ABSENT,
  decide,
  DomainError,
  evolve,
  type PresentRun,
  type RunScheduledData,
  type RunSnapshot,
  runStreamId,
} from '@chronicle/domain';
import {
  type EventStore,
  type StreamAppend,
  type UnitOfWork,
  WrongExpectedRevisionError,
} from '@chronicle/event-store';
import { EVENT_STORE, inSpan, PG_POOL, tracingOn, type Queryable } from '@chronicle/platform';
import { runsInsert, runsUpdate, runsUpsert } from '@chronicle/projections';
import { recordedMetadata } from './event-metadata';
import type { RunBatch, RunDecision } from './run-batch';
import type { RunPass } from './run-pass';
import { RunLog } from './run-log';
import { RunReservations } from './run-reservations';

/**
 * A decision on a run that its append refused: with a log of its own, the row it was decided from
 * lagged the run's stream. Nothing was written; the caller may ask again.
 */
export function changedWhileDecided(runId: string): DomainError {
  return new DomainError('conflict', `run ${runId} changed while it was decided; ask again`);
}

/**
 * The batch half of the claim protocol (RunsUnitOfWork.decide: claims,
 * completions and the scheduler's passes), in one append and one
 * write-through however many batches (a worker's completions and its next
 * claim): for runs whose locks the unit of work holds, decide each, append
 * every run's events in one multi-stream append expecting the revision read,
 * and write the rows through. A run the decider turns down is left out. The
 * rows go with the append (UnitOfWork.append's writeThrough: one statement
 * when the log shares the transaction). With a log of its own (no shared
 * transaction), a run whose stream moved on since its row was written (the
 * row lags the log until the projector applies it) is dropped from the batch
 * and the rest appended again: the append decides, the row proposed.
 * Resolves with each batch's decisions, in the batches' order.
 */
async function decideAndAppendBatches(uow: UnitOfWork, batches: readonly RunBatch[]): Promise<RunDecision[][]> {
  const decisions = new Map<string, RunDecision & { append: StreamAppend; batch: number }>();
  for (const [batch, runBatch] of batches.entries())
    for (const decision of decideBatch(runBatch)) decisions.set(decision.append.streamId, { ...decision, batch });
  while (decisions.size > 0) {
    try {
      const chosen = [...decisions.values()];
      await uow.append(
        chosen.map((d) => d.append),
        runsUpdate(
          chosen.map((d) => d.after),
          redefinedRuns(chosen),
        ),
      );
      break;
    } catch (err) {
      // In a shared transaction a failed append has aborted it: only a log of its own can go on.
      if (uow.atomic || !(err instanceof WrongExpectedRevisionError) || !decisions.has(err.streamId)) throw err;
      decisions.delete(err.streamId);
    }
  }
  const decided = batches.map((): RunDecision[] => []);
  for (const { before, after, events, batch } of decisions.values()) decided[batch]!.push({ before, after, events });
  return decided;
}

/** Each run of a batch the decider decided on, with its append expecting the revision read. */
function decideBatch({
  runs,
  decideOne,
  metadata: metadataOf,
}: RunBatch): Array<RunDecision & { append: StreamAppend }> {
  return runs.flatMap((run) => {
    const events = decideOne(run);
    if (events === null || events.length === 0) return [];
    const metadata = recordedMetadata({
      ...(typeof metadataOf === 'function' ? metadataOf(run) : metadataOf),
      ...runTeamMetadata(run),
    });
    const streamId = runStreamId(run.definition.runId);
    return [
      {
        before: run,
        after: events.reduce<RunSnapshot>(evolve, run) as PresentRun,
        events,
        append: {
          streamId,
          expected: BigInt(run.revision),
          events: events.map((e) => ({ type: e.type, data: e.data, metadata })),
        },
      },
    ];
  });
}

/** The runs whose definition a decision changed (a RunDebounced's payload): their `run_listing` rows are written again. */
function redefinedRuns(decisions: readonly RunDecision[]): ReadonlySet<string> {
  return new Set(
    decisions.filter((d) => d.after.definition !== d.before.definition).map((d) => d.before.definition.runId),
  );
}

/**
 * Whose run an event is, recorded with each: its team (its RunScheduled's). The audit trail finds a
 * team's events by it without reading the run's row, and an auditor reading one event sees whose run
 * it was. The rest of the run's place (queue, priority, due time) is in its RunScheduled alone: the
 * activity counts take it from there or from the run's row.
 */
function runTeamMetadata({ definition }: PresentRun): { readonly team: string } {
  return { team: definition.team };
}

/**
 * New runs, every one decided by the run decider (ScheduleRun) like any
 * other transition: one append expecting no stream for each, one insert of
 * their rows, sent with the append. The enqueue endpoints, backfills, the materialiser and the test
 * seeds all create runs here. Resolves with the runs as they now are, and the decisions on the runs of
 * `also` (an enqueue's debounced runs), appended and written with them: one append for the unit of work.
 */
async function scheduleNewRuns(
  uow: UnitOfWork,
  { runs, metadata, madeIds, also }: ScheduleRuns,
): Promise<{ created: PresentRun[]; decided: RunDecision[] }> {
  const amended = also === undefined ? [] : decideBatch(also);
  if (runs.length === 0 && amended.length === 0) return { created: [], decided: [] };
  const decided = runs.map((run) => {
    const events = decide({ type: 'ScheduleRun', run }, ABSENT);
    return { run, events, after: events.reduce<RunSnapshot>(evolve, ABSENT) as PresentRun };
  });
  const created = decided.map((d) => d.after);
  const recorded = recordedMetadata(metadata);
  const amendedRuns = amended.map((d) => d.after);
  await uow.append(
    [
      ...decided.map(({ run, events }) => {
        // The run's team, as every later event of the run records it: the audit trail finds a team's runs by it.
        const withTeam = { ...recorded, team: run.team };
        return {
          streamId: runStreamId(run.runId),
          expected: madeIds?.has(run.runId) === true ? ('new_stream' as const) : ('no_stream' as const),
          events: events.map((e) => ({ type: e.type, data: e.data, metadata: withTeam })),
        };
      }),
      ...amended.map((d) => d.append),
    ],
    // New runs alone (nearly always): their inserts. With runs decided on: those rows' updates (and the new ones' inserts).
    amended.length === 0
      ? runsInsert(created, { alone: uow.atomic })
      : created.length === 0
        ? runsUpdate(amendedRuns, redefinedRuns(amended))
        : runsUpsert([...created, ...amendedRuns], redefinedRuns(amended)),
  );
  return { created, decided: amended };
}

/** What `decide` takes: the batches of runs whose locks the unit of work holds, each with how to decide its runs. */
export interface DecideRuns {
  readonly batches: readonly RunBatch[];
}

/** What `schedule` takes: the new runs, and the metadata of their RunScheduled events. */
export interface ScheduleRuns {
  readonly runs: readonly RunScheduledData[];
  readonly metadata: Readonly<Record<string, unknown>>;
  /**
   * The runs whose ids were made for this call (random): their streams cannot exist, so the log
   * does not look for them. A derived id (from an idempotency key or a fire time) may name a run
   * that exists, and is left out.
   */
  readonly madeIds?: ReadonlySet<string>;
  /**
   * Runs whose locks the unit of work holds, decided on in the same append as the new runs (an enqueue's
   * debounced runs): a unit of work appends once, so that its stream locks are all taken before it writes.
   */
  readonly also?: RunBatch;
}

/**
 * One unit of work on runs (RunDecisions.unitOfWork): lock and read through
 * `tx` first (the log's lock-first rule: nothing is written before the
 * append), then decide on the runs read, or schedule new ones. Each call is
 * one append with its rows written through.
 */
export interface RunsUnitOfWork {
  readonly tx: Queryable;
  /**
   * Decides each run of every batch, appends every run's events in one
   * multi-stream append expecting the revision read, and writes the rows
   * through. Resolves with each batch's decisions, in the batches' order; a
   * run the decider turns down is left out (see decideAndAppendBatches).
   */
  decide(options: DecideRuns): Promise<RunDecision[][]>;
  /**
   * New runs, each decided by the run decider (ScheduleRun): one append expecting no stream for each, their
   * rows inserted, and `also`'s runs decided on in the same append. Resolves with the new runs.
   */
  schedule(options: ScheduleRuns): Promise<PresentRun[]>;
  /** schedule, resolving with the decisions on `also`'s runs beside the new runs. */
  scheduleWith(options: ScheduleRuns): Promise<{ created: PresentRun[]; decided: RunDecision[] }>;
}

/**
 * A store's unit of work as a RunsUnitOfWork, telling `decided` of each batch's decisions (RunDecisions logs
 * them once the unit of work commits). For RunDecisions, and for a test that holds its own transaction.
 */
export function runsUnitOfWork(
  store: UnitOfWork,
  decided: (decisions: readonly RunDecision[], metadata: RunBatch['metadata']) => void = () => undefined,
): RunsUnitOfWork {
  const uow = withAppendSpans(store);
  const scheduleWith = async (options: ScheduleRuns): Promise<{ created: PresentRun[]; decided: RunDecision[] }> => {
    const result = await scheduleNewRuns(uow, options);
    if (options.also !== undefined) decided(result.decided, options.also.metadata);
    return result;
  };
  return {
    tx: uow.tx,
    decide: async ({ batches }) => {
      const decisions = await decideAndAppendBatches(uow, batches);
      for (const [i, batch] of batches.entries()) decided(decisions[i]!, batch.metadata);
      return decisions;
    },
    schedule: async (options) => (await scheduleWith(options)).created,
    scheduleWith,
  };
}

/** `uow` with each append in a span of its own (docs/operations.md, "Traces"): its streams and events counted. */
function withAppendSpans(uow: UnitOfWork): UnitOfWork {
  if (!tracingOn()) return uow;
  return {
    tx: uow.tx,
    atomic: uow.atomic,
    append: (appends, writeThrough) =>
      inSpan(
        'chronicle.append',
        {
          'chronicle.streams': appends.length,
          'chronicle.events': appends.reduce((n, a) => n + a.events.length, 0),
        },
        () => uow.append(appends, writeThrough),
      ),
  };
}

/**
 * The one place run events are appended: every command on runs (claim,
 * complete, heartbeat, cancel, replay, discard, the DLQ's bulk actions,
 * enqueue and batch enqueue, the materialiser and backfills, and the
 * scheduler's passes: the lease reaper and the overlap policies) loads its
 * runs, decides, appends the events and writes the read rows here.
 *
 * A unit of work is the store's (one transaction with the log in the read
 * models' database; reserve-then-append where the log is elsewhere), through
 * the process's RunReservations: runs whose appends committed while their
 * rows did not stay out of the claims and passes until their rows catch up.
 * Once it commits, its decisions are logged (RunLog), one line per event.
 */
@Injectable()
export class RunDecisions {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
    private readonly reservations: RunReservations,
    private readonly runLog: RunLog,
  ) {}

  /** `work` in one unit of work on runs; resolves with its result once committed, its decisions logged. */
  async unitOfWork<T>(work: (runs: RunsUnitOfWork) => Promise<T>): Promise<T> {
    const logged: Array<{ decided: readonly RunDecision[]; metadata: RunBatch['metadata'] }> = [];
    const result = await this.reservations.unitOfWork(this.store, this.pool, (uow) =>
      work(runsUnitOfWork(uow, (decided, metadata) => logged.push({ decided, metadata }))),
    );
    for (const { decided, metadata } of logged) this.runLog.decided(decided, metadata);
    return result;
  }

  /**
   * One of the scheduler's passes over runs (the lease reaper, the overlap
   * policy): in batches of up to `batch`, each one unit of work that locks
   * and reads its runs (leaving out the runs reserved), decides each, and
   * appends and writes them through together; a full batch is followed at
   * once by the next. Resolves with the runs decided; `onCommitted` hears of
   * each batch's decisions once it committed.
   */
  async pass<Context>({
    batch,
    lockAndLoad,
    decideOne,
    actor,
    schemaVersion,
    onCommitted,
  }: RunPass<Context>): Promise<number> {
    let decided = 0;
    const metadata = { actor, schemaVersion };
    while (true) {
      const reserved = await this.reservedRunIds();
      const decisions = await this.unitOfWork(async (work) => {
        const locked = await lockAndLoad(work.tx, batch, reserved);
        if (locked === null) return [];
        const { runs, now, context } = locked;
        const [these] = await work.decide({
          batches: [{ runs, decideOne: (run) => decideOne(run, now, context), metadata }],
        });
        return these!;
      });
      onCommitted?.(decisions);
      decided += decisions.length;
      if (decisions.length < batch) return decided;
    }
  }

  /** Runs not to propose now: their appends committed, their rows not yet (RunReservations). */
  reservedRunIds(): Promise<string[]> {
    return this.reservations.reservedRunIds(this.pool);
  }
}
