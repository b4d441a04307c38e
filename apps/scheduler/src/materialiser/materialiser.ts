import type { Pool } from 'pg';
import {
  findDerivedRuns,
  newRunScheduled,
  PostgresPayloadStore,
  type RunDecisions,
  type RunServer,
  RunServers,
  type RunsUnitOfWork,
  scheduledRunId,
  scheduledRunIdBefore,
  storeLargePayloads,
  type PayloadStore,
} from '@chronicle/commands';
import {
  RUN_EVENT_SCHEMA_VERSION,
  type RunScheduledData,
  planScheduledRuns,
  RUN_ALL_CAP,
  parseScheduleSpec,
} from '@chronicle/domain';
import { WrongExpectedRevisionError } from '@chronicle/event-store';
import type { Clock } from '@chronicle/platform';
import { holdShards } from '../shards/shard-fence';
import type { ShardScope } from '../shards/shard-ownership';
import { advanceCursors, type CursorMove, lockDueSchedules } from './scheduled-jobs.sql';

/** The schedule was validated when the job was defined; its zone is trusted here. */
const VALIDATED_ZONE = (): boolean => true;

/** Jobs materialised per transaction: one append, one row upsert and one cursor update for all of them. */
export const MATERIALISE_BATCH_JOBS = 500;
/** Batches in flight at once: while PostgreSQL writes one, the next is planned (SKIP LOCKED keeps them apart). */
const CONCURRENT_BATCHES = 2;

export interface MaterialisedBatch {
  /** Jobs whose cursor this batch moved. */
  readonly jobs: number;
  /** The runs appended (RunScheduled), committed when the batch resolves. */
  readonly runs: readonly RunScheduledData[];
}

/** A due job's part of a batch: its cursor's move, its runs, and their ids as the existence check takes them. */
interface PlannedJob {
  readonly move: CursorMove;
  readonly runs: readonly RunScheduledData[];
  readonly ids: ReadonlyArray<{ readonly runId: string; readonly before: string }>;
}

/** What the materialiser needs of the server a job's runs are kept on. */
type JobRunsServer = Pick<RunServer, 'pool' | 'decisions' | 'isControl'>;

/**
 * The materialiser (docs/api.md, "Schedules"): for every scheduled, unpaused
 * job, append RunScheduled for each fire time up to `lookaheadSeconds` ahead,
 * and move the job's cursor in the same transaction. Run ids derive from (job,
 * nominal time), so a run materialised twice meets "stream exists" and is not
 * doubled. A pass reads only the jobs due within the lookahead (the cursors'
 * due index), in batches, of the shards in its scope, and writes under their
 * epochs (holdShards).
 *
 * The jobs, their cursors and the fence are in the control database; a job's
 * runs on its shard's server (docs/sharding.md). A batch is one unit of work
 * of the control database's RunDecisions, which locks the due jobs and holds
 * the fence until it commits: the runs of jobs kept there are appended in it,
 * the others in a unit of work on their server, each committed before the
 * cursors move. Without a shard map every run is in the control database and
 * a batch is the one transaction it always was. A batch that fails after a
 * server committed its runs leaves the cursors where they were: the next pass
 * plans the same runs again and finds them.
 */
export class Materialiser {
  private readonly control: RunDecisions;
  private readonly serverOf: (job: string) => JobRunsServer;

  /**
   * @param runs where the runs go: the run servers, or one RunDecisions for a single database whose
   *   runs are all in the control database (`pool`), as the tests and the benches make one.
   */
  constructor(
    runs: RunServers | RunDecisions,
    pool: Pool,
    private readonly clock: Clock,
    private readonly lookaheadSeconds = 60,
    private readonly payloads: PayloadStore = new PostgresPayloadStore(pool),
  ) {
    if (runs instanceof RunServers) {
      // RunServers counts the control database among `all`, whether or not the map places a shard there.
      this.control = runs.all.find((s) => s.isControl)!.decisions;
      this.serverOf = (job) => runs.ofJob(job);
    } else {
      const sole: JobRunsServer = { pool, decisions: runs, isControl: true };
      this.control = runs;
      this.serverOf = () => sole;
    }
  }

  /** Batches until no job of the scope's shards is due; resolves with the number of runs appended. */
  async materialiseOnce(scope: ShardScope, onBatch?: (batch: MaterialisedBatch) => void): Promise<number> {
    let appended = 0;
    let done = false;
    const drain = async (): Promise<void> => {
      while (!done) {
        const batch = await this.materialiseBatch(scope);
        appended += batch.runs.length;
        onBatch?.(batch);
        if (batch.jobs < MATERIALISE_BATCH_JOBS) done = true;
      }
    };
    await Promise.all(Array.from({ length: CONCURRENT_BATCHES }, drain));
    return appended;
  }

  /** One unit of work over up to MATERIALISE_BATCH_JOBS due jobs of the scope's shards. */
  async materialiseBatch(scope: ShardScope): Promise<MaterialisedBatch> {
    const now = this.clock.now();
    return this.control
      .unitOfWork(async (work) => {
        const tx = work.tx;
        const due = await lockDueSchedules(
          tx,
          new Date(now.getTime() + this.lookaheadSeconds * 1000),
          MATERIALISE_BATCH_JOBS,
          scope,
        );
        if (due.length === 0) return { jobs: 0, runs: [] };
        await holdShards(tx, scope);
        const planned = due.map(({ definition, version, materialised_through }): PlannedJob => {
          const plan = planScheduledRuns({
            jobName: definition.name,
            spec: parseScheduleSpec(definition.schedule, VALIDATED_ZONE),
            cursor: materialised_through,
            now,
            lookaheadSeconds: this.lookaheadSeconds,
            runAllCap: RUN_ALL_CAP,
          });
          const ids = plan.runs.map(({ nominalAt }) => ({
            runId: scheduledRunId(definition.name, nominalAt),
            before: scheduledRunIdBefore(definition.name, nominalAt),
          }));
          const runs = plan.runs.map((run, i) =>
            newRunScheduled(definition, version, {
              runId: ids[i]!.runId,
              dueAt: run.dueAt,
              idempotencyKey: run.idempotencyKey,
              source: run.source,
            }),
          );
          return {
            move: { job: definition.name, materialisedThrough: plan.cursor, nextFireAt: plan.nextFireAt },
            runs,
            ids,
          };
        });
        const fresh: RunScheduledData[] = [];
        for (const [server, jobs] of this.byServer(planned)) fresh.push(...(await this.schedule(work, server, jobs)));
        await advanceCursors(
          tx,
          planned.map((p) => p.move),
        );
        return { jobs: due.length, runs: fresh };
      })
      .catch((err: unknown) => {
        // A backfill created one of these runs after the existence check: the next pass sees it and goes on.
        if (err instanceof WrongExpectedRevisionError) return { jobs: 0, runs: [] };
        throw err;
      });
  }

  /**
   * The new runs of one server's jobs, appended: those of the control database in the batch's unit of
   * work (`work`), the others in a unit of work on their server. Resolves with the runs appended.
   */
  private async schedule(
    work: RunsUnitOfWork,
    server: JobRunsServer,
    jobs: readonly PlannedJob[],
  ): Promise<RunScheduledData[]> {
    // Backfills and a second scheduler create the same run ids: what exists stays as it is.
    const existing = await findDerivedRuns(
      server.isControl ? work.tx : server.pool,
      jobs.flatMap((j) => j.ids),
    );
    const fresh = jobs.flatMap((j) => j.runs).filter((s) => !existing.has(s.runId));
    // A job's large default payload is stored once, before the append names it (its runs share it).
    const lean = await storeLargePayloads(this.payloads, fresh);
    const runs = { runs: lean, metadata: { actor: 'scheduler:materialiser', schemaVersion: RUN_EVENT_SCHEMA_VERSION } };
    if (server.isControl) await work.schedule(runs);
    else if (lean.length > 0) await server.decisions.unitOfWork((there) => there.schedule(runs));
    return fresh;
  }

  /** The planned jobs grouped by the server of their runs, in the order each server first comes. */
  private byServer(planned: readonly PlannedJob[]): Map<JobRunsServer, PlannedJob[]> {
    const groups = new Map<JobRunsServer, PlannedJob[]>();
    for (const job of planned) {
      const server = this.serverOf(job.move.job);
      const group = groups.get(server);
      if (group === undefined) groups.set(server, [job]);
      else group.push(job);
    }
    return groups;
  }
}
