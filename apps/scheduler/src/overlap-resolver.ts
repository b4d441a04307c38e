import type { Pool } from 'pg';
import { decideAndAppendRuns } from '../../../libs/application/src/decide-runs';
import { DomainError } from '../../../libs/domain/src/domain-error';
import { decide, type RunCommand } from '../../../libs/domain/src/run/run-decider';
import { RUN_EVENT_SCHEMA_VERSION } from '../../../libs/domain/src/run/run-events';
import type { EventStore } from '../../../libs/event-store/src/event-store.port';
import { PostgresEventStore } from '../../../libs/event-store/src/postgres/postgres.event-store';
import { withTransaction } from '../../../libs/platform/src/database/pg-pool';
import { loadRuns, lockOverlapTargets, type OverlapTarget } from './overlapping-runs.sql';

const BATCH = 500;

/**
 * The overlap policies of scheduled jobs (Temporal's names), applied each
 * scheduler tick: a fire that must not start is cancelled with the reason
 * `overlap_skipped`, a leased run a newer fire replaces with
 * `overlap_superseded`; `detail` names the other run. The events say why.
 */
export class OverlapResolver {
  constructor(
    private readonly eventStore: EventStore,
    private readonly pool: Pool,
  ) {}

  /** One pass; resolves with the number of runs decided. */
  async resolveOnce(): Promise<number> {
    const store = this.eventStore;
    if (!(store instanceof PostgresEventStore)) throw new Error('the overlap resolver needs the PostgreSQL event store');
    let decided = 0;
    while (true) {
      const count = await withTransaction(this.pool, async (tx) => {
        const targets = new Map((await lockOverlapTargets(tx, BATCH)).map((t) => [t.run_id, t]));
        if (targets.size === 0) return 0;
        const { runs, now } = await loadRuns(tx, [...targets.keys()]);
        const decisions = await decideAndAppendRuns(tx, store, runs, (run) => decideOverlap(targets.get(run.definition.runId)!, run, now), {
          actor: 'scheduler:overlap-policy',
          schemaVersion: RUN_EVENT_SCHEMA_VERSION,
        });
        return decisions.length;
      });
      decided += count;
      if (count < BATCH) return decided;
    }
  }
}

function decideOverlap(target: OverlapTarget, run: Parameters<typeof decide>[1], now: Date): ReturnType<typeof decide> | null {
  const command: RunCommand =
    target.action === 'supersede'
      ? { type: 'SupersedeRun', now, detail: `overlapPolicy cancel_other: superseded by the newer fire ${target.other}` }
      : { type: 'SkipOverlappingRun', now, detail: skipDetail(target) };
  try {
    return decide(command, run);
  } catch (err) {
    // The run moved on since the targets were read (leased, finished): nothing to decide.
    if (err instanceof DomainError) return null;
    throw err;
  }
}

function skipDetail(target: OverlapTarget): string {
  if (target.policy === 'buffer_one') return `overlapPolicy buffer_one: one fire already waits for run ${target.other} to finish`;
  if (target.policy === 'cancel_other') return 'overlapPolicy cancel_other: a newer fire replaces this one';
  return `overlapPolicy skip: run ${target.other} was still running`;
}
