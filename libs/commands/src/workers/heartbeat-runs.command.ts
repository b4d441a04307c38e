import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { DomainError, TraceContext, WorkerCaller } from '@chronicle/domain';
import { RunServers } from '../shards/run-servers';
import { RunLog } from '../unit-of-work/run-log';
import { decideForWorker } from './decide-for-worker';

export interface Heartbeat {
  readonly runId: string;
  readonly fencingToken: number;
  readonly leaseSeconds: number;
  /** The worker's attempt's trace (its span), recorded with the run's LeaseExtended. */
  readonly trace?: TraceContext;
}

/** Per run: its lease's new expiry, or why it was refused (stale-lease, not-found). */
export type HeartbeatResult =
  | { readonly runId: string; readonly leaseExpiresAt: string | null }
  | { readonly runId: string; readonly refused: DomainError };

/**
 * Heartbeats, one or many in one unit of work (decideForWorker), like
 * completions: each extends its run's lease (LeaseExtended) when its fencing
 * token is the current one; a stale token refuses that run alone.
 */
export class HeartbeatRuns extends Command<HeartbeatResult[]> {
  constructor(
    readonly caller: WorkerCaller,
    readonly heartbeats: readonly Heartbeat[],
  ) {
    super();
  }
}

@CommandHandler(HeartbeatRuns)
export class HeartbeatRunsHandler implements ICommandHandler<HeartbeatRuns> {
  constructor(
    private readonly servers: RunServers,
    private readonly runLog: RunLog,
  ) {}

  async execute({ caller, heartbeats }: HeartbeatRuns): Promise<HeartbeatResult[]> {
    const wanted = new Map(heartbeats.map((h) => [h.runId, h]));
    // One unit of work per server the runs are on (nearly always one).
    const decided = await Promise.all(
      this.servers
        .split([...wanted.keys()], (runId) => this.servers.ofRun(runId))
        .map(([server, runIds]) =>
          decideForWorker(
            server.decisions,
            caller,
            runIds,
            (run, now) => ({
              type: 'ExtendLease',
              fencingToken: wanted.get(run.definition.runId)!.fencingToken,
              leaseSeconds: wanted.get(run.definition.runId)!.leaseSeconds,
              now,
            }),
            (runId) => wanted.get(runId)?.trace,
          ),
        ),
    );
    const decisions = decided.flat();
    const byRun = new Map(decisions.map((d) => [d.runId, d]));
    return heartbeats.map(({ runId }) => {
      const decision = byRun.get(runId)!;
      if (!('refused' in decision)) return { runId, leaseExpiresAt: decision.run.lease?.expiresAt ?? null };
      this.runLog.refused(runId, wanted.get(runId)!.fencingToken, decision.refused);
      return decision;
    });
  }
}
