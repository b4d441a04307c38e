import { Inject, Injectable } from '@nestjs/common';
import type { Pool } from 'pg';
import { decide } from '../../../../libs/domain/src/run/run-decider';
import { RUN_EVENT_SCHEMA_VERSION } from '../../../../libs/domain/src/run/run-events';
import { decideAndAppendRuns } from '../../../../libs/application/src/decide-runs';
import type { EventStore } from '../../../../libs/event-store/src/event-store.port';
import type { LeasedRun } from '../../../../libs/worker-sdk/src/protocol';
import { PostgresEventStore } from '../../../../libs/event-store/src/postgres/postgres.event-store';
import { withTransaction, type Queryable } from '../../../../libs/platform/src/database/pg-pool';
import type { Config, PriorityWeights } from '../../../../libs/platform/src/config/config';
import { CONFIG, EVENT_STORE, PG_POOL } from '../../../../libs/platform/src/runtime/tokens';
import type { WorkerCaller } from '../auth/caller';
import { countTeamsServed, lockReadyRuns, loadLockedRuns, nextAvailableAt, withinConcurrencyLimits, type ClaimScope } from './claim-ready-runs.sql';
import { ReadySignal } from './ready-signal';

export interface LeaseRequest {
  readonly queues: readonly string[];
  readonly max: number;
  readonly waitSeconds: number;
  readonly leaseSeconds: number;
  readonly workerId: string;
}

/** One lease as `POST /v1/lease` returns it: the SDK's wire type, so server and SDK cannot drift apart. */
export type Lease = LeasedRun;

/** Without a wake-up, a waiting lease request looks again this often (runs made ready by other processes). */
const FALLBACK_POLL_MS = 250;

@Injectable()
export class LeaseService {
  private readonly servedTeams = new Map<string, { teams: number; until: number }>();

  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(CONFIG) private readonly config: Config,
    private readonly ready: ReadySignal,
  ) {}

  /** Claim now; with waitSeconds, wait for work until the deadline (woken by new runs, or at the next due time). */
  async lease(caller: WorkerCaller, request: LeaseRequest): Promise<Lease[]> {
    const deadline = Date.now() + request.waitSeconds * 1000;
    while (true) {
      const leases = await this.claim(caller, request);
      const left = deadline - Date.now();
      if (leases.length > 0 || left <= 0) return leases;
      const next = await nextAvailableAt(this.pool, request.queues, caller.team);
      const untilNext = next === null ? Infinity : next.getTime() - Date.now();
      await this.ready.wait(Math.min(left, FALLBACK_POLL_MS, Math.max(untilNext, 1)), undefined);
    }
  }

  /**
   * Claims in one transaction each. A claim that had to leave runs of a
   * concurrency-limited job behind (its headroom was smaller than its runs
   * among the candidates) may come back short: another claim, which sees
   * that job at its limit, fills the batch with other jobs' runs.
   */
  private async claim(caller: WorkerCaller, request: LeaseRequest): Promise<Lease[]> {
    const store = this.eventStore;
    if (!(store instanceof PostgresEventStore)) throw new Error('batch claims need the PostgreSQL event store');
    const teamsServed = await this.teamsServed(caller, request.queues);
    const leases: Lease[] = [];
    for (let round = 0; round < MAX_CLAIM_ROUNDS && leases.length < request.max; round++) {
      const wanted = { ...request, max: request.max - leases.length };
      const claimed = await withTransaction(this.pool, (tx) => claimReadyRuns(tx, store, caller, wanted, this.config.priorityWeights, teamsServed));
      leases.push(...claimed.leases);
      if (!claimed.capped || claimed.leases.length === 0) break;
    }
    return leases;
  }

  /** A team's worker serves its team; a platform worker the teams granted its queues (kept a few seconds: grants change rarely). */
  private async teamsServed(caller: WorkerCaller, queues: readonly string[]): Promise<number> {
    if (caller.team !== null) return 1;
    const key = [...queues].sort().join('\u0000');
    const known = this.servedTeams.get(key);
    if (known !== undefined && known.until > Date.now()) return known.teams;
    const teams = await countTeamsServed(this.pool, queues);
    if (this.servedTeams.size >= 1000) this.servedTeams.clear();
    this.servedTeams.set(key, { teams, until: Date.now() + 5_000 });
    return teams;
  }
}

/** Claims per lease call at most: the first, and two more to fill in behind concurrency-limited jobs. */
const MAX_CLAIM_ROUNDS = 3;

/**
 * One claim in the caller's transaction, five round trips for the whole
 * batch: lock candidates (the dispatch policy), read them, append every
 * RunLeased (expecting the revision read, under the lock no other writer can
 * move it), write the rows through; two more when a concurrency-limited
 * job's runs are among them. Committing is the caller's. `capped`: runs of
 * a limited job were left out for its headroom, so the batch may be short.
 */
export async function claimReadyRuns(tx: Queryable, store: PostgresEventStore, caller: WorkerCaller, request: LeaseRequest, weights: PriorityWeights, teamsServed = 1): Promise<{ leases: Lease[]; capped: boolean }> {
  const scope: ClaimScope = { team: caller.team, queues: request.queues, teamsServed };
  const { runIds, capped } = await lockReadyRuns(tx, scope, request.max, weights);
  if (runIds.length === 0) return { leases: [], capped };
  const locked = await loadLockedRuns(tx, runIds);
  const [runs, now] = [await withinConcurrencyLimits(tx, locked.runs, locked.limitedJobs), locked.now];
  const decisions = await decideAndAppendRuns(
    tx,
    store,
    runs,
    (run) => decide({ type: 'LeaseRun', workerId: request.workerId, leaseSeconds: request.leaseSeconds, now }, run),
    { actor: `worker:${caller.team ?? 'platform'}:${request.workerId}`, schemaVersion: RUN_EVENT_SCHEMA_VERSION },
  );
  const leases = decisions.flatMap(({ after, events }) =>
    events.flatMap((event) =>
      event.type === 'RunLeased'
        ? [{ runId: after.definition.runId, job: after.definition.job, attempt: event.data.attempt, idempotencyKey: after.definition.idempotencyKey, fencingToken: event.data.fencingToken, leaseExpiresAt: event.data.leaseExpiresAt, payload: after.definition.payload }]
        : [],
    ),
  );
  return { leases, capped: capped || runs.length < locked.runs.length };
}
