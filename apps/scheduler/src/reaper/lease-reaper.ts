import { randomInt } from 'node:crypto';
import type { Pool } from 'pg';
import type { RunMetrics, RunServers } from '@chronicle/commands';
import { decide, RUN_EVENT_SCHEMA_VERSION } from '@chronicle/domain';
import { passOnEveryServer } from '../shards/shard-fence';
import type { ShardScope } from '../shards/shard-ownership';
import { lockExpiredLeases, loadExpiredLeases } from './reap-expired-leases.sql';

const BATCH = 500;

/**
 * Returns runs whose lease expired to retry_wait (LeaseExpired) or, with no
 * attempts left, to dead (LeaseExpired then RunDead). Runs every tick;
 * a full batch is followed at once by the next. On every run server, under
 * the fence held in the control database (`control`).
 */
export class LeaseReaper {
  constructor(
    private readonly servers: RunServers,
    private readonly control: Pool,
    private readonly metrics: RunMetrics,
  ) {}

  /** One pass over the scope's shards; resolves with the number of runs reaped. */
  async reapOnce(scope: ShardScope): Promise<number> {
    return passOnEveryServer(this.servers, this.control, scope, (server, hold, own) =>
      server.decisions.pass({
        batch: BATCH,
        lockAndLoad: async (tx, limit, reserved) => {
          const ids = await lockExpiredLeases(tx, limit, reserved, own);
          if (ids.length === 0) return null;
          await hold(tx);
          return { ...(await loadExpiredLeases(tx, ids)), context: null };
        },
        decideOne: (run, now) => decide({ type: 'ExpireLease', now, draw: randomInt(1_000_000) / 1_000_000 }, run),
        actor: 'scheduler:lease-reaper',
        schemaVersion: RUN_EVENT_SCHEMA_VERSION,
        onCommitted: (decisions) => this.metrics.countDecisions(decisions),
      }),
    );
  }
}
