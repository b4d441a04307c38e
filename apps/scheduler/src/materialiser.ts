import type { Pool } from 'pg';
import { newRunScheduled, scheduledRunId } from '../../../libs/application/src/new-run';
import { RUN_EVENT_SCHEMA_VERSION } from '../../../libs/domain/src/run/run-events';
import { ABSENT, evolve, type RunSnapshot } from '../../../libs/domain/src/run/run-state';
import { planScheduledRuns, RUN_ALL_CAP } from '../../../libs/domain/src/schedule/plan-scheduled-runs';
import { parseScheduleSpec } from '../../../libs/domain/src/schedule/schedule-spec';
import { runStreamId } from '../../../libs/domain/src/streams';
import { WrongExpectedRevisionError } from '../../../libs/event-store/src/event-store.errors';
import type { EventStore } from '../../../libs/event-store/src/event-store.port';
import { PostgresEventStore } from '../../../libs/event-store/src/postgres/postgres.event-store';
import type { Clock } from '../../../libs/platform/src/clock/clock';
import { withTransaction } from '../../../libs/platform/src/database/pg-pool';
import { findRunSnapshots, upsertRuns } from '../../../projections/runs.sql';
import { advanceCursor, findScheduledJobs } from './scheduled-jobs.sql';

type PresentRun = Exclude<RunSnapshot, { status: 'absent' }>;

class RaceLost extends Error {}

/** The schedule was validated when the job was defined; its zone is trusted here. */
const VALIDATED_ZONE = (): boolean => true;

/**
 * Reference 7.2: for every scheduled, unpaused job, append RunScheduled for
 * each fire time up to `lookaheadSeconds` ahead, and move the job's cursor in
 * the same transaction. Run ids derive from (job, nominal time), so a run
 * materialised twice meets "stream exists" and is not doubled.
 */
export class Materialiser {
  constructor(
    private readonly eventStore: EventStore,
    private readonly pool: Pool,
    private readonly clock: Clock,
    private readonly lookaheadSeconds = 60,
  ) {}

  /** One pass over all scheduled jobs; resolves with the number of runs appended. */
  async materialiseOnce(): Promise<number> {
    const store = this.eventStore;
    if (!(store instanceof PostgresEventStore)) throw new Error('the materialiser needs the PostgreSQL event store');
    let appended = 0;
    for (const job of await findScheduledJobs(this.pool)) {
      const definition = job.definition;
      const plan = planScheduledRuns({
        jobName: definition.name,
        spec: parseScheduleSpec(definition.schedule, VALIDATED_ZONE),
        cursor: job.materialised_through,
        now: this.clock.now(),
        lookaheadSeconds: this.lookaheadSeconds,
        runAllCap: RUN_ALL_CAP,
      });
      const scheduled = plan.runs.map((run) =>
        newRunScheduled(definition, { runId: scheduledRunId(definition.name, run.nominalAt), dueAt: run.dueAt, idempotencyKey: run.idempotencyKey, source: run.source }),
      );
      appended += await withTransaction(this.pool, async (tx) => {
        const existing = new Set((await findRunSnapshots(tx, scheduled.map((s) => s.runId))).map((r) => r.definition.runId));
        const fresh = scheduled.filter((s) => !existing.has(s.runId));
        if (fresh.length > 0) {
          const metadata = { actor: 'scheduler:materialiser', schemaVersion: RUN_EVENT_SCHEMA_VERSION };
          await store.appendWith(tx, fresh.map((data) => ({ streamId: runStreamId(data.runId), expected: 'no_stream' as const, events: [{ type: 'RunScheduled', data, metadata }] })));
          await upsertRuns(tx, fresh.map((data) => evolve(ABSENT, { type: 'RunScheduled', data }) as PresentRun));
        }
        // Another scheduler moved the cursor first: give this pass back.
        if (!(await advanceCursor(tx, definition.name, job.materialised_through, plan.cursor))) throw new RaceLost();
        return fresh.length;
      }).catch((err: unknown) => {
        // Another scheduler got there first (cursor, or one of the run streams): its runs are the same ones.
        if (err instanceof RaceLost || err instanceof WrongExpectedRevisionError) return 0;
        throw err;
      });
    }
    return appended;
  }
}
