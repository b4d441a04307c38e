import type { Pool } from 'pg';
import {
  findDerivedRuns,
  newRunScheduled,
  PostgresPayloadStore,
  type RunDecisions,
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
import { advanceCursors, lockDueSchedules } from './scheduled-jobs.sql';

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

/**
 * The materialiser (docs/api.md, "Schedules"): for every scheduled, unpaused
 * job, append RunScheduled for each fire time up to `lookaheadSeconds` ahead,
 * and move the job's cursor in the same transaction. Run ids derive from (job,
 * nominal time), so a run materialised twice meets "stream exists" and is not
 * doubled. A pass reads only the jobs due within the lookahead (the cursors'
 * due index), in batches, of the shards in its scope, and writes under their
 * epochs (holdShards).
 */
export class Materialiser {
  constructor(
    private readonly decisions: RunDecisions,
    pool: Pool,
    private readonly clock: Clock,
    private readonly lookaheadSeconds = 60,
    private readonly payloads: PayloadStore = new PostgresPayloadStore(pool),
  ) {}

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
    return this.decisions
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
        const planned = due.map(({ definition, version, materialised_through }) => {
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
        const scheduled = planned.flatMap((p) => p.runs);
        // Backfills and a second scheduler create the same run ids: what exists stays as it is.
        const existing = await findDerivedRuns(
          tx,
          planned.flatMap((p) => p.ids),
        );
        const fresh = scheduled.filter((s) => !existing.has(s.runId));
        // A job's large default payload is stored once, before the append names it (its runs share it).
        const lean = await storeLargePayloads(this.payloads, fresh);
        await work.schedule({
          runs: lean,
          metadata: { actor: 'scheduler:materialiser', schemaVersion: RUN_EVENT_SCHEMA_VERSION },
        });
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
}
