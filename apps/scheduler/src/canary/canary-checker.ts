import type { Pool } from 'pg';
import { Counter, Gauge, type Registry } from 'prom-client';
import { canaryJobName, type RunServers, scheduledRunId, scheduledRunIdBefore } from '@chronicle/commands';
import { withTransaction, type Clock, type Queryable } from '@chronicle/platform';
import { holdShards } from '../shards/shard-fence';
import type { ShardScope } from '../shards/shard-ownership';

const MINUTE = 60_000;
/** A canary run due at a minute has a minute to succeed; then the minute counts as missed. */
export const CANARY_GRACE_MS = MINUTE;
/** Minutes looked at per shard and check at most (after a long stop, the latest). */
const MAX_MINUTES = 60;

/** One shard's verdict on the minutes a check looked at. */
export interface CanaryVerdict {
  readonly shard: number;
  readonly minutes: number;
  readonly missed: number;
  readonly consecutiveMissed: number;
  /** Of the last canary run that succeeded among them; null if none did. */
  readonly lagSeconds: number | null;
}

/** The canaries' metrics, set by the node owning each shard (docs/operations.md, "Metrics"). */
export class CanaryMetrics {
  readonly lag: Gauge<'shard'>;
  readonly missed: Counter<'shard'>;
  readonly consecutive: Gauge<'shard'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.lag = new Gauge({
      name: 'chronicle_canary_lag_seconds',
      help: "The last successful canary run's first lease time minus its due time, per shard",
      labelNames: ['shard'],
      registers,
    });
    this.missed = new Counter({
      name: 'chronicle_canary_missed_total',
      help: 'Minutes whose canary run had not succeeded a minute after it was due, per shard',
      labelNames: ['shard'],
      registers,
    });
    this.consecutive = new Gauge({
      name: 'chronicle_canary_consecutive_missed',
      help: 'Minutes in a row the shard missed its canary (2 or more: the alert, and /healthz degraded)',
      labelNames: ['shard'],
      registers,
    });
  }
}

interface StatusRow {
  shard: number;
  checked_through: Date;
  consecutive_missed: number;
}

interface CanaryRunRow {
  run_id: string;
  state: string;
  lag_seconds: number | null;
}

/**
 * The node owning a shard checks its canary (docs/operations.md, "Canaries"): each minute whose
 * canary run is past its grace, once, in order, from where canary_status says the last check (of any
 * owner) stopped. A run that succeeded gives the lag; one that did not (never made, never leased,
 * failed) is a miss. The write is fenced like every pass of the shard's owner. canary_status and the
 * fence are in the control database (`pool`), a canary run's row on the server its id names.
 */
export class CanaryChecker {
  constructor(
    private readonly pool: Pool,
    private readonly servers: RunServers,
    private readonly shards: number,
    private readonly clock: Clock,
    private readonly metrics?: CanaryMetrics,
  ) {}

  async checkOnce(scope: ShardScope): Promise<CanaryVerdict[]> {
    if (scope.leases.length === 0) return [];
    const lastDue = new Date(Math.floor((this.clock.now().getTime() - CANARY_GRACE_MS) / MINUTE) * MINUTE);
    const verdicts = await withTransaction(this.pool, async (tx) => {
      await holdShards(tx, scope);
      const shards = scope.leases.map((l) => l.shard);
      const { rows: known } = await tx.query<StatusRow>(
        'SELECT shard, checked_through, consecutive_missed FROM canary_status WHERE shard = ANY($1::int[]) FOR UPDATE',
        [shards],
      );
      const status = new Map(known.map((r) => [r.shard, r]));
      const plans = shards.map((shard) => {
        const job = canaryJobName(shard, this.shards);
        const was = status.get(shard);
        // A shard seen for the first time starts with the next minute: its past has no canary runs.
        const from = was === undefined ? lastDue.getTime() + MINUTE : was.checked_through.getTime() + MINUTE;
        const first = Math.max(from, lastDue.getTime() - (MAX_MINUTES - 1) * MINUTE);
        const minutes: Date[] = [];
        for (let t = first; t <= lastDue.getTime(); t += MINUTE) minutes.push(new Date(t));
        const runIds = minutes.map((m) => ({ runId: scheduledRunId(job, m), before: scheduledRunIdBefore(job, m) }));
        return { shard, job, was, minutes, runIds };
      });
      const ids = plans.flatMap((p) => p.runIds.flatMap(({ runId, before }) => [runId, before]));
      const byId = new Map<string, CanaryRunRow>();
      // The control database's rows in this transaction, as in a single database; the others' on their server.
      for (const [server, onServer] of this.servers.split(ids, (id) => this.servers.ofRun(id)))
        for (const run of await canaryRuns(server.isControl ? tx : server.pool, onServer)) byId.set(run.run_id, run);
      const found: CanaryVerdict[] = [];
      for (const plan of plans) {
        let consecutive = plan.was?.consecutive_missed ?? 0;
        let missed = 0;
        let lagSeconds: number | null = null;
        for (const { runId, before } of plan.runIds) {
          const run = byId.get(runId) ?? byId.get(before);
          if (run?.state === 'succeeded') {
            consecutive = 0;
            lagSeconds = Math.max(0, run.lag_seconds ?? 0);
          } else {
            consecutive++;
            missed++;
          }
        }
        const through = plan.minutes.at(-1) ?? plan.was?.checked_through ?? lastDue;
        await tx.query(
          `INSERT INTO canary_status AS s (shard, job, checked_through, consecutive_missed, missed_total, last_lag_seconds)
           VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (shard) DO UPDATE SET job = EXCLUDED.job, checked_through = EXCLUDED.checked_through,
                  consecutive_missed = EXCLUDED.consecutive_missed, missed_total = s.missed_total + EXCLUDED.missed_total,
                  last_lag_seconds = coalesce(EXCLUDED.last_lag_seconds, s.last_lag_seconds), updated_at = now()`,
          [plan.shard, plan.job, through, consecutive, missed, lagSeconds],
        );
        found.push({
          shard: plan.shard,
          minutes: plan.runIds.length,
          missed,
          consecutiveMissed: consecutive,
          lagSeconds,
        });
      }
      return found;
    });
    this.record(verdicts, scope);
    return verdicts;
  }

  /** Only the owner shows a shard's gauges: those of shards this node no longer holds go. */
  private record(verdicts: readonly CanaryVerdict[], scope: ShardScope): void {
    if (this.metrics === undefined) return;
    const held = new Set(scope.leases.map((l) => l.shard));
    for (let shard = 0; shard < this.shards; shard++)
      if (!held.has(shard)) {
        this.metrics.lag.remove({ shard: String(shard) });
        this.metrics.consecutive.remove({ shard: String(shard) });
      }
    for (const v of verdicts) {
      const shard = String(v.shard);
      if (v.lagSeconds !== null) this.metrics.lag.set({ shard }, v.lagSeconds);
      if (v.missed > 0) this.metrics.missed.inc({ shard }, v.missed);
      this.metrics.consecutive.set({ shard }, v.consecutiveMissed);
    }
  }
}

/** The rows of these runs, with each one's lag: its first lease time minus its due time. */
async function canaryRuns(db: Queryable, runIds: readonly string[]): Promise<CanaryRunRow[]> {
  const { rows } = await db.query<CanaryRunRow>(
    `SELECT run_id, state, extract(epoch FROM leased_at - due_at)::float8 AS lag_seconds
       FROM runs WHERE run_id = ANY($1::text[])`,
    [runIds],
  );
  return rows;
}
