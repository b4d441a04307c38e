import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import {
  actorOf,
  decide,
  DomainError,
  RUN_EVENT_SCHEMA_VERSION,
  type PresentRun,
  type RunEvent,
  type TeamCaller,
} from '@chronicle/domain';
import { type Clock, CLOCK, type Queryable } from '@chronicle/platform';
import { RunServers } from '../shards/run-servers';
import { lockAndLoadRuns } from '../workers/complete-runs.sql';
import { ReadySignal } from '../workers/ready-signal';
import { sqlValues } from '../listings/sql-values';

/** Which dead runs a bulk replay or discard takes: each field given narrows it. */
export interface DeadLetterSelection {
  readonly job?: string | undefined;
  /** Their last error contains this text (case-insensitive). */
  readonly errorContains?: string | undefined;
  /** Dead at or after. */
  readonly deadAfter?: Date | undefined;
  /** Dead before. */
  readonly deadBefore?: Date | undefined;
}

export interface DeadLettersProgress {
  /** The runs the selection held when the operation began. */
  readonly matched: number;
  /** Of those, looked at so far. */
  readonly processed: number;
  /** Replayed or discarded so far. */
  readonly acted: number;
  /** Changed meanwhile (replayed or discarded by someone else), so left alone. */
  readonly skipped: number;
}

/** POST /v1/dlq:replay and :discard: every dead run of the team the selection holds, in batches. */
export class ActOnDeadLetters extends Command<DeadLettersProgress> {
  constructor(
    readonly caller: TeamCaller,
    readonly action: 'replay' | 'discard',
    readonly selection: DeadLetterSelection,
    readonly dryRun: boolean,
    /** Told after each batch (a streamed answer shows it); the next batch waits for it. */
    readonly onProgress: (progress: DeadLettersProgress) => void | Promise<void> = () => undefined,
  ) {
    super();
  }
}

const BATCH = 100;

/**
 * The selection is taken when the operation begins: runs dead by then (a run replayed here that dies
 * again is not taken twice). Each batch is one unit of work: lock the runs, decide each from its
 * locked row, append every event with the caller as actor, write the rows through. A run that is no
 * longer a dead, kept run of the selection is skipped, never forced.
 */
@CommandHandler(ActOnDeadLetters)
export class ActOnDeadLettersHandler implements ICommandHandler<ActOnDeadLetters> {
  constructor(
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly ready: ReadySignal,
    private readonly servers: RunServers,
  ) {}

  async execute({ caller, action, selection, dryRun, onProgress }: ActOnDeadLetters): Promise<DeadLettersProgress> {
    const now = this.clock.now();
    const bounded: DeadLetterSelection = {
      ...selection,
      deadBefore: selection.deadBefore === undefined || selection.deadBefore > now ? now : selection.deadBefore,
    };
    // Each server's dead runs, one server after the other (a run is on one server).
    const counts = await Promise.all(this.servers.all.map((s) => countDeadRuns(s.pool, caller.team, bounded)));
    const matched = counts.reduce((sum, n) => sum + n, 0);
    let progress: DeadLettersProgress = { matched, processed: 0, acted: 0, skipped: 0 };
    if (dryRun || matched === 0) return progress;
    const metadata = { actor: actorOf(caller), schemaVersion: RUN_EVENT_SCHEMA_VERSION };
    for (const [i, server] of this.servers.all.entries()) {
      if (counts[i] === 0) continue;
      let after: DeadRunKey | undefined;
      while (true) {
        const keys = await findDeadRuns(server.pool, caller.team, bounded, after, BATCH);
        if (keys.length === 0) break;
        after = keys[keys.length - 1];
        const decided = await server.decisions.unitOfWork(async (work) => {
          const { runs, now: dbNow } = await lockAndLoadRuns(
            work.tx,
            keys.map((k) => k.runId),
          );
          const chosen = runs.filter((run) => run.definition.team === caller.team && selects(bounded, run));
          const command =
            action === 'replay'
              ? { type: 'ReplayRun' as const, now: dbNow }
              : { type: 'DiscardRun' as const, now: dbNow };
          const decideOne = (run: PresentRun): RunEvent[] | null => decideOrSkip(() => decide(command, run));
          const [these] = await work.decide({ batches: [{ runs: chosen, decideOne, metadata }] });
          return these!;
        });
        if (action === 'replay' && decided.length > 0) this.ready.notify();
        progress = {
          matched,
          processed: progress.processed + keys.length,
          acted: progress.acted + decided.length,
          skipped: progress.skipped + keys.length - decided.length,
        };
        await onProgress(progress);
        if (keys.length < BATCH) break;
      }
    }
    // Runs that left the selection before their batch (replayed or discarded meanwhile) were skipped too.
    return { matched, processed: matched, acted: progress.acted, skipped: matched - progress.acted };
  }
}

/** A run the decider turns down (it is no longer dead, or already discarded) is skipped. */
function decideOrSkip(decision: () => RunEvent[]): RunEvent[] | null {
  try {
    return decision();
  } catch (err) {
    if (err instanceof DomainError) return null;
    throw err;
  }
}

/** The selection, checked again on the locked row: it may have changed since it was found. */
function selects(selection: DeadLetterSelection, run: PresentRun): boolean {
  if (run.status !== 'dead' || run.discarded || run.death === null) return false;
  const deadAt = new Date(run.death.deadAt);
  return (
    (selection.job === undefined || run.definition.job === selection.job) &&
    (selection.errorContains === undefined ||
      (run.death.lastError ?? '').toLowerCase().includes(selection.errorContains.toLowerCase())) &&
    (selection.deadAfter === undefined || deadAt >= selection.deadAfter) &&
    (selection.deadBefore === undefined || deadAt < selection.deadBefore)
  );
}

interface DeadRunKey {
  readonly deadAt: Date;
  readonly runId: string;
}

/** The team's dead, kept runs of the selection, by runs_dlq_idx (team, dead_at, run_id). */
function selectionSql(
  team: string,
  selection: DeadLetterSelection,
): { where: string; values: unknown[]; param: (v: unknown) => string } {
  const { values, param } = sqlValues();
  const conditions = [`r.team = ${param(team)}`, `r.ended = 'dead'`, 'NOT r.discarded'];
  if (selection.job !== undefined) conditions.push(`r.job = ${param(selection.job)}`);
  if (selection.errorContains !== undefined)
    conditions.push(`strpos(lower(coalesce(r.last_error, '')), lower(${param(selection.errorContains)})) > 0`);
  if (selection.deadAfter !== undefined) conditions.push(`r.dead_at >= ${param(selection.deadAfter)}`);
  if (selection.deadBefore !== undefined) conditions.push(`r.dead_at < ${param(selection.deadBefore)}`);
  return { where: conditions.join(' AND '), values, param };
}

async function countDeadRuns(db: Queryable, team: string, selection: DeadLetterSelection): Promise<number> {
  const { where, values } = selectionSql(team, selection);
  const { rows } = await db.query<{ count: string }>({ text: `SELECT count(*) FROM runs r WHERE ${where}`, values });
  return Number(rows[0]?.count ?? 0);
}

/** The next batch of the selection, oldest death first, after `after`. */
async function findDeadRuns(
  db: Queryable,
  team: string,
  selection: DeadLetterSelection,
  after: DeadRunKey | undefined,
  limit: number,
): Promise<DeadRunKey[]> {
  const { where, values, param } = selectionSql(team, selection);
  const keyset =
    after === undefined ? '' : ` AND (r.dead_at, r.run_id) > (${param(after.deadAt)}, ${param(after.runId)})`;
  const { rows } = await db.query<{ dead_at: Date; run_id: string }>({
    text: `SELECT r.dead_at, r.run_id FROM runs r WHERE ${where}${keyset} ORDER BY r.dead_at, r.run_id LIMIT ${param(limit)}`,
    values,
  });
  return rows.map((r) => ({ deadAt: r.dead_at, runId: r.run_id }));
}
