import { DomainError } from '../domain-error';
import { MAX_PREFETCH_MS } from './lease-defaults';
import { backoffSeconds } from './retry-backoff';
import { takesDebounce } from './debounced-runs';
import type { PayloadRef, RunEvent, RunScheduledData } from './run-events';
import type { PresentRun, RunSnapshot } from './run-snapshot';
import { isWaiting } from './run-states';

/**
 * No lease lasts longer than this in total, whatever the heartbeats (docs/architecture.md, "Claims and
 * fencing tokens").
 */
export const MAX_TOTAL_LEASE_SECONDS = 6 * 60 * 60;

/** The longest wait before a retry a failure may ask for (a day). */
export const MAX_RETRY_AFTER_SECONDS = 86_400;

export type RunCommand =
  | { readonly type: 'ScheduleRun'; readonly run: RunScheduledData }
  | {
      readonly type: 'LeaseRun';
      readonly workerId: string;
      readonly leaseSeconds: number;
      readonly now: Date;
      /** Lease a run due this much after `now` too, to start at its due time (at most MAX_PREFETCH_MS). */
      readonly prefetchMs?: number;
    }
  | { readonly type: 'ExtendLease'; readonly fencingToken: number; readonly leaseSeconds: number; readonly now: Date }
  | {
      readonly type: 'CompleteRun';
      readonly fencingToken: number;
      readonly outcome: 'success' | 'failure';
      readonly error: string | null;
      readonly retryable: boolean;
      readonly now: Date;
      /** Random draw in [0, 1) for the backoff. */
      readonly draw: number;
      /**
       * A failure that said when to try again (an HTTP target's `Retry-After`): the retry waits this
       * long instead of the backoff, at most MAX_RETRY_AFTER_SECONDS.
       */
      readonly retryAfterSeconds?: number;
    }
  | { readonly type: 'ExpireLease'; readonly now: Date; readonly draw: number }
  | { readonly type: 'CancelRun'; readonly now: Date }
  /** The overlap policy's decisions: skip a due fire, or end a leased run a newer fire supersedes. */
  | { readonly type: 'SkipOverlappingRun'; readonly now: Date; readonly detail: string }
  | { readonly type: 'SupersedeRun'; readonly now: Date; readonly detail: string }
  | { readonly type: 'ReplayRun'; readonly now: Date }
  | { readonly type: 'DiscardRun'; readonly now: Date }
  /** An enqueue naming the run's debounce key: ready at `availableAt`, with the enqueue's payload. */
  | {
      readonly type: 'DebounceRun';
      readonly now: Date;
      readonly availableAt: Date;
      readonly payload: unknown;
      readonly payloadRef?: PayloadRef;
    };

/** decide(command, state) -> events. Pure: time and randomness are in the command. */
export function decide(command: RunCommand, state: RunSnapshot): RunEvent[] {
  if (command.type === 'ScheduleRun') {
    if (state.status !== 'absent')
      throw new DomainError('invalid-transition', `run ${command.run.runId} already exists`);
    return [{ type: 'RunScheduled', data: command.run }];
  }
  if (state.status === 'absent') throw new DomainError('not-found', 'run not found');
  const at = (date: Date): string => date.toISOString();
  const plusSeconds = (date: Date, seconds: number): Date => new Date(date.getTime() + seconds * 1000);
  switch (command.type) {
    case 'LeaseRun': {
      if (!isWaiting(state.status))
        throw new DomainError('invalid-transition', `a ${state.status} run cannot be leased`);
      const availableAt = Date.parse(state.availableAt);
      const ahead = Math.min(Math.max(command.prefetchMs ?? 0, 0), MAX_PREFETCH_MS);
      if (availableAt > command.now.getTime() + ahead)
        throw new DomainError('not-ready', `run is not due before ${state.availableAt}`);
      // Leased ahead: the run starts at its due time, and its lease runs from then.
      const notBefore = availableAt > command.now.getTime() ? new Date(availableAt) : null;
      const cap = Math.min(MAX_TOTAL_LEASE_SECONDS, state.definition.timeoutSeconds);
      const expires = plusSeconds(notBefore ?? command.now, Math.min(command.leaseSeconds, cap));
      return [
        {
          type: 'RunLeased',
          data: {
            attempt: state.attempt + 1,
            fencingToken: state.revision + 1,
            workerId: command.workerId,
            leasedAt: at(command.now),
            leaseExpiresAt: at(expires),
            ...(notBefore === null ? {} : { notBefore: at(notBefore) }),
          },
        },
      ];
    }
    case 'ExtendLease': {
      const lease = currentLease(state, command.fencingToken);
      const cap = plusSeconds(
        new Date(lease.leasedAt),
        Math.min(MAX_TOTAL_LEASE_SECONDS, state.definition.timeoutSeconds),
      );
      const wanted = plusSeconds(command.now, command.leaseSeconds);
      return [
        {
          type: 'LeaseExtended',
          data: { fencingToken: lease.fencingToken, leaseExpiresAt: at(wanted < cap ? wanted : cap) },
        },
      ];
    }
    case 'CompleteRun': {
      const lease = currentLease(state, command.fencingToken);
      if (command.outcome === 'success')
        return [
          {
            type: 'RunSucceeded',
            data: { attempt: state.attempt, fencingToken: lease.fencingToken, completedAt: at(command.now) },
          },
        ];
      const wait =
        command.retryAfterSeconds === undefined
          ? backoffSeconds(state.attempt, state.definition.retry, command.draw)
          : Math.min(Math.max(command.retryAfterSeconds, 0), MAX_RETRY_AFTER_SECONDS);
      const retryAt =
        command.retryable && state.attempt < state.attemptLimit ? at(plusSeconds(command.now, wait)) : null;
      const failed: RunEvent = {
        type: 'RunFailed',
        data: {
          attempt: state.attempt,
          fencingToken: lease.fencingToken,
          error: command.error,
          retryable: command.retryable,
          failedAt: at(command.now),
          retryAt,
        },
      };
      if (retryAt !== null) return [failed];
      const reason = command.retryable ? 'attempts_exhausted' : 'not_retryable';
      return [
        failed,
        {
          type: 'RunDead',
          data: { attempt: state.attempt, reason, lastError: command.error, deadAt: at(command.now) },
        },
      ];
    }
    case 'ExpireLease': {
      if (state.status !== 'leased' || state.lease === null)
        throw new DomainError('invalid-transition', `a ${state.status} run has no lease to expire`);
      if (Date.parse(state.lease.expiresAt) > command.now.getTime())
        throw new DomainError('invalid-transition', 'the lease has not expired');
      const retryAt =
        state.attempt < state.attemptLimit
          ? at(plusSeconds(command.now, backoffSeconds(state.attempt, state.definition.retry, command.draw)))
          : null;
      const expired: RunEvent = {
        type: 'LeaseExpired',
        data: { attempt: state.attempt, fencingToken: state.lease.fencingToken, expiredAt: at(command.now), retryAt },
      };
      if (retryAt !== null) return [expired];
      return [
        expired,
        {
          type: 'RunDead',
          data: {
            attempt: state.attempt,
            reason: 'lease_expired',
            lastError: state.lastError ?? 'lease expired',
            deadAt: at(command.now),
          },
        },
      ];
    }
    case 'CancelRun':
      if (!isWaiting(state.status))
        throw new DomainError('invalid-transition', `a ${state.status} run cannot be cancelled`);
      return [{ type: 'RunCancelled', data: { cancelledAt: at(command.now) } }];
    case 'SkipOverlappingRun':
      if (state.status !== 'scheduled')
        throw new DomainError('invalid-transition', `a ${state.status} run is not a fire waiting to start`);
      return [
        {
          type: 'RunCancelled',
          data: { cancelledAt: at(command.now), reason: 'overlap_skipped', detail: command.detail },
        },
      ];
    case 'SupersedeRun':
      // The lease ends with the run: the worker's next heartbeat or completion gets stale-lease.
      if (state.status !== 'leased')
        throw new DomainError('invalid-transition', `a ${state.status} run is not running`);
      return [
        {
          type: 'RunCancelled',
          data: { cancelledAt: at(command.now), reason: 'overlap_superseded', detail: command.detail },
        },
      ];
    case 'ReplayRun':
      if (state.status !== 'dead' || state.discarded)
        throw new DomainError(
          'invalid-transition',
          `only a dead run in the DLQ can be replayed, this one is ${state.discarded ? 'discarded' : state.status}`,
        );
      return [
        {
          type: 'RunReplayed',
          data: { replayedAt: at(command.now), attemptLimit: state.attempt + state.definition.retry.maxAttempts },
        },
      ];
    case 'DiscardRun':
      if (state.status !== 'dead' || state.discarded)
        throw new DomainError(
          'invalid-transition',
          `only a dead run in the DLQ can be discarded, this one is ${state.discarded ? 'discarded' : state.status}`,
        );
      return [{ type: 'RunDiscarded', data: { discardedAt: at(command.now) } }];
    case 'DebounceRun':
      if (!takesDebounce(state))
        throw new DomainError(
          'invalid-transition',
          `a ${state.status} run ${state.attempt > 0 ? 'that was leased ' : ''}cannot be debounced`,
        );
      return [
        {
          type: 'RunDebounced',
          data: {
            debouncedAt: at(command.now),
            availableAt: at(command.availableAt),
            payload: command.payload,
            ...(command.payloadRef === undefined ? {} : { payloadRef: command.payloadRef }),
          },
        },
      ];
    default: {
      const unknown: never = command;
      throw new Error(`unknown run command ${JSON.stringify(unknown)}`);
    }
  }
}

function currentLease(state: PresentRun, fencingToken: number): NonNullable<typeof state.lease> {
  if (state.status !== 'leased' || state.lease === null || state.lease.fencingToken !== fencingToken) {
    throw new DomainError('stale-lease', `fencing token ${fencingToken} is not the run's current lease`);
  }
  return state.lease;
}
