import { randomInt } from 'node:crypto';
import type { RunDecisions, RunMetrics } from '@chronicle/commands';
import { decide, RUN_EVENT_SCHEMA_VERSION } from '@chronicle/domain';
import { holdShards } from '../shards/shard-fence';
import type { ShardScope } from '../shards/shard-ownership';
import { lockExpiredLeases, loadExpiredLeases } from './reap-expired-leases.sql';

const BATCH = 500;

/**
 * Returns runs whose lease expired to retry_wait (LeaseExpired) or, with no
 * attempts left, to dead (LeaseExpired then RunDead). Runs every tick;
 * a full batch is followed at once by the next.
 */
export class LeaseReaper {
  constructor(
    private readonly decisions: RunDecisions,
    private readonly metrics: RunMetrics,
  ) {}

  /** One pass over the scope's shards; resolves with the number of runs reaped. */
  async reapOnce(scope: ShardScope): Promise<number> {
    return this.decisions.pass({
      batch: BATCH,
      lockAndLoad: async (tx, limit, reserved) => {
        const ids = await lockExpiredLeases(tx, limit, reserved, scope);
        if (ids.length === 0) return null;
        await holdShards(tx, scope);
        return { ...(await loadExpiredLeases(tx, ids)), context: null };
      },
      decideOne: (run, now) => decide({ type: 'ExpireLease', now, draw: randomInt(1_000_000) / 1_000_000 }, run),
      actor: 'scheduler:lease-reaper',
      schemaVersion: RUN_EVENT_SCHEMA_VERSION,
      onCommitted: (decisions) => this.metrics.countDecisions(decisions),
    });
  }
}
