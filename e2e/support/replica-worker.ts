import { apiClient } from './api-client';
import type { RunningApp } from './start-app';
import type { TeamClients } from './team-tokens';

/** What a lease answer gives a run, as far as these calls need it. */
interface Leased {
  readonly runId: string;
  readonly fencingToken: number;
}

/**
 * A worker of a team's queue on any of several API processes (startReplicas): its lease and its
 * completion over HTTP, each answer checked (any other status than 200 throws, with the answer). `team` is read at each call, so it may be made once the
 * replicas are up.
 */
export function replicaWorker<L extends Leased>(team: () => TeamClients, queue = 'ops') {
  const on = (via: RunningApp) => apiClient(via.url, team().workerToken);
  return {
    async lease(via: RunningApp, max: number, waitSeconds: number): Promise<L[]> {
      const answer = await on(via).post<{ leases: L[] }>('/v1/lease', { queues: [queue], max, waitSeconds });
      if (answer.status !== 200) throw new Error(`lease answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      return answer.body.leases;
    },
    async complete(done: L, via: RunningApp, outcome: 'success' | 'failure' = 'success'): Promise<void> {
      const answer = await on(via).post(`/v1/runs/${done.runId}/complete`, {
        fencingToken: done.fencingToken,
        outcome,
        ...(outcome === 'failure' ? { error: 'failed on purpose' } : {}),
      });
      if (answer.status !== 200)
        throw new Error(`completion answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    },
  };
}
