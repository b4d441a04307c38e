import type { DomainError, RunEvent } from '@chronicle/domain';
import type { JsonLogger, LogLevel } from '@chronicle/platform';
import type { RunBatch, RunDecision } from './run-batch';

/**
 * Each run event's line: debug for the hot path's (a lease, a success: one
 * per run, thousands a second), info for what an operator looks for
 * (failures, expired leases, dead letters, an actor's cancel or replay).
 * Heartbeats (LeaseExtended) are not logged: their news is the expiry they prevent.
 */
const LINE_OF: Record<RunEvent['type'], { readonly level: LogLevel; readonly msg: string } | null> = {
  RunScheduled: { level: 'debug', msg: 'run scheduled' },
  RunLeased: { level: 'debug', msg: 'run leased' },
  LeaseExtended: null,
  RunSucceeded: { level: 'debug', msg: 'run succeeded' },
  RunFailed: { level: 'info', msg: 'run failed' },
  LeaseExpired: { level: 'info', msg: 'lease expired' },
  RunDead: { level: 'info', msg: 'run dead-lettered' },
  RunCancelled: { level: 'info', msg: 'run cancelled' },
  RunReplayed: { level: 'info', msg: 'run replayed' },
  RunDiscarded: { level: 'info', msg: 'run discarded' },
  RunDebounced: { level: 'debug', msg: 'run debounced' },
};

/**
 * Lines about runs, written once their decisions are committed: each with
 * the run's id, job, attempt and fencing token (the lease the event is
 * about), never its payload or a worker's error text. A level turned off
 * costs a level check per batch.
 */
export class RunLog {
  constructor(private readonly logger: JsonLogger) {}

  /** The committed decisions' events, one line each, with the actor of their metadata. */
  decided(decisions: readonly RunDecision[], metadata: RunBatch['metadata']): void {
    if (decisions.length === 0) return;
    const debug = this.logger.isLevelEnabled('debug');
    if (!debug && !this.logger.isLevelEnabled('info')) return;
    for (const { before, after, events } of decisions) {
      const actor = (typeof metadata === 'function' ? metadata(before) : metadata)['actor'];
      for (const event of events) {
        const line = LINE_OF[event.type];
        if (line === null || (line.level === 'debug' && !debug)) continue;
        const { data } = event;
        this.logger[line.level](line.msg, {
          runId: after.definition.runId,
          job: after.definition.job,
          attempt: 'attempt' in data ? data.attempt : after.attempt,
          // A RunDead or a cancel tells no token: the lease it ended was the one before.
          fencingToken: 'fencingToken' in data ? data.fencingToken : (before.lease?.fencingToken ?? null),
          event: event.type,
          state: after.status,
          actor,
          ...detailsOf(event),
        });
      }
    }
  }

  /** A worker's call on a run refused (a stale fencing token, a run it may not see): debug. */
  refused(runId: string, fencingToken: number, refusal: DomainError): void {
    if (this.logger.isLevelEnabled('debug'))
      this.logger.debug('run call refused', { runId, fencingToken, code: refusal.code });
  }
}

/** What an event tells beyond the run's fields: never a payload, nor a worker's error text. */
function detailsOf(event: RunEvent): Record<string, unknown> {
  switch (event.type) {
    case 'RunLeased':
      return { workerId: event.data.workerId, leaseExpiresAt: event.data.leaseExpiresAt };
    case 'RunFailed':
      return { retryable: event.data.retryable, retryAt: event.data.retryAt };
    case 'LeaseExpired':
      return { retryAt: event.data.retryAt };
    case 'RunDead':
      return { reason: event.data.reason };
    case 'RunCancelled':
      return event.data.reason === undefined ? {} : { reason: event.data.reason };
    case 'RunScheduled':
      return { queue: event.data.queue, dueAt: event.data.dueAt };
    case 'RunDebounced':
      return { availableAt: event.data.availableAt };
    case 'LeaseExtended':
    case 'RunSucceeded':
    case 'RunReplayed':
    case 'RunDiscarded':
      return {};
    default: {
      const unknown: never = event;
      return unknown;
    }
  }
}
