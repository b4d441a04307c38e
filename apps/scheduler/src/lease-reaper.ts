import { randomInt } from 'node:crypto';
import type { Pool } from 'pg';
import { decideAndAppendRuns } from '../../../libs/application/src/decide-runs';
import { decide } from '../../../libs/domain/src/run/run-decider';
import { RUN_EVENT_SCHEMA_VERSION } from '../../../libs/domain/src/run/run-events';
import { PostgresEventStore } from '../../../libs/event-store/src/postgres/postgres.event-store';
import type { EventStore } from '../../../libs/event-store/src/event-store.port';
import { withTransaction } from '../../../libs/platform/src/database/pg-pool';
import { lockExpiredLeases, loadExpiredLeases } from './reap-expired-leases.sql';

const BATCH = 500;

/**
 * Returns runs whose lease expired to retry_wait (LeaseExpired) or, with no
 * attempts left, to dead (LeaseExpired then RunDead). Runs every tick;
 * a full batch is followed at once by the next.
 */
export class LeaseReaper {
  constructor(
    private readonly eventStore: EventStore,
    private readonly pool: Pool,
  ) {}

  /** One pass; resolves with the number of runs reaped. */
  async reapOnce(): Promise<number> {
    const store = this.eventStore;
    if (!(store instanceof PostgresEventStore)) throw new Error('the lease reaper needs the PostgreSQL event store');
    let reaped = 0;
    while (true) {
      const count = await withTransaction(this.pool, async (tx) => {
        const ids = await lockExpiredLeases(tx, BATCH);
        if (ids.length === 0) return 0;
        const { runs, now } = await loadExpiredLeases(tx, ids);
        const decisions = await decideAndAppendRuns(tx, store, runs, (run) => decide({ type: 'ExpireLease', now, draw: randomInt(1_000_000) / 1_000_000 }, run), {
          actor: 'scheduler:lease-reaper',
          schemaVersion: RUN_EVENT_SCHEMA_VERSION,
        });
        return decisions.length;
      });
      reaped += count;
      if (count < BATCH) return reaped;
    }
  }
}
