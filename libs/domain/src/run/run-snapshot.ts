import { isWaiting, type RunState } from './run-states';
import type { RunDeadData, RunEvent, RunScheduledData } from './run-events';

/** A run as its events left it. `ready` is not stored: it is `waiting` with availableAt <= now. */
export type RunSnapshot =
  | { readonly status: 'absent'; readonly revision: -1 }
  | {
      readonly status: Exclude<RunState, 'ready'>;
      /** Revision of the last event applied: the expected revision of the next append. */
      readonly revision: number;
      readonly definition: RunScheduledData;
      /** Attempts started so far. */
      readonly attempt: number;
      /** The last attempt number allowed. */
      readonly attemptLimit: number;
      /** When a scheduled or retry_wait run becomes ready. */
      readonly availableAt: string;
      readonly lease: {
        readonly fencingToken: number;
        readonly workerId: string;
        readonly leasedAt: string;
        readonly expiresAt: string;
      } | null;
      readonly lastError: string | null;
      readonly death: RunDeadData | null;
      readonly discarded: boolean;
      /**
       * When the run ended for good (succeeded, cancelled, or dead and discarded), from its last event;
       * null while it can still change (a dead run waits in the DLQ). Retention counts its days from it.
       */
      readonly finishedAt: string | null;
    };

export const ABSENT: RunSnapshot = { status: 'absent', revision: -1 };

/** A run that exists: every state but absent. */
export type PresentRun = Exclude<RunSnapshot, { status: 'absent' }>;

/** evolve(state, event) -> state: the fold of a run's stream. */
export function evolve(state: RunSnapshot, event: RunEvent): RunSnapshot {
  const revision = state.revision + 1;
  if (event.type === 'RunScheduled') {
    const d = event.data;
    return {
      status: 'scheduled',
      revision,
      definition: d,
      attempt: 0,
      attemptLimit: d.retry.maxAttempts,
      availableAt: d.dueAt,
      lease: null,
      lastError: null,
      death: null,
      discarded: false,
      finishedAt: null,
    };
  }
  if (state.status === 'absent') throw new Error(`${event.type} before RunScheduled`);
  const s: PresentRun = state;
  switch (event.type) {
    case 'RunLeased':
      return {
        ...s,
        revision,
        status: 'leased',
        attempt: event.data.attempt,
        lease: {
          fencingToken: event.data.fencingToken,
          workerId: event.data.workerId,
          leasedAt: event.data.leasedAt,
          expiresAt: event.data.leaseExpiresAt,
        },
      };
    case 'LeaseExtended':
      return { ...s, revision, lease: s.lease === null ? null : { ...s.lease, expiresAt: event.data.leaseExpiresAt } };
    case 'RunSucceeded':
      return { ...s, revision, status: 'succeeded', lease: null, finishedAt: event.data.completedAt };
    case 'RunFailed':
      return {
        ...s,
        revision,
        status: 'retry_wait',
        lease: null,
        lastError: event.data.error,
        availableAt: event.data.retryAt ?? s.availableAt,
      };
    case 'LeaseExpired':
      return {
        ...s,
        revision,
        status: 'retry_wait',
        lease: null,
        lastError: s.lastError ?? 'lease expired',
        availableAt: event.data.retryAt ?? s.availableAt,
      };
    case 'RunDead':
      return { ...s, revision, status: 'dead', lease: null, death: event.data };
    case 'RunCancelled':
      return { ...s, revision, status: 'cancelled', lease: null, finishedAt: event.data.cancelledAt };
    case 'RunReplayed':
      return {
        ...s,
        revision,
        status: 'scheduled',
        attemptLimit: event.data.attemptLimit,
        availableAt: event.data.replayedAt,
        death: null,
      };
    case 'RunDiscarded':
      return { ...s, revision, discarded: true, finishedAt: event.data.discardedAt };
    case 'RunDebounced': {
      // The newest payload replaces the one before, a reference with it: the run's definition is its latest enqueue's.
      const { payloadRef: _before, ...definition } = s.definition;
      const { payload, payloadRef } = event.data;
      return {
        ...s,
        revision,
        availableAt: event.data.availableAt,
        definition: { ...definition, payload, ...(payloadRef === undefined ? {} : { payloadRef }) },
      };
    }
    default: {
      const unknown: never = event;
      throw new Error(`unknown run event ${JSON.stringify(unknown)}`);
    }
  }
}

export function foldRun(events: readonly RunEvent[]): RunSnapshot {
  return events.reduce(evolve, ABSENT);
}

/** The state a user sees, with `ready` derived from time. */
export function visibleState(state: PresentRun, now: Date): RunState {
  return isWaiting(state.status) && Date.parse(state.availableAt) <= now.getTime() ? 'ready' : state.status;
}
