import {
  RunEventType,
  type LeaseExpiredData,
  type RunFailedData,
  type RunLeasedData,
} from '@chronicle/domain/vocabulary';
import type { RunEvent } from './api/operations';

export interface Attempt {
  readonly attempt: number;
  readonly workerId: string;
  readonly leasedAt: string;
  /** How it ended, by the event that ended it; undefined while leased. */
  readonly outcome: string | undefined;
  readonly endedAt: string | undefined;
  readonly error: string | null;
}

/** A run's attempts from its events: each lease, and the success, failure or expiry that ended it. */
export function attemptsOf(events: readonly RunEvent[]): Attempt[] {
  const attempts: Attempt[] = [];
  for (const event of events) {
    if (event.type === RunEventType.RunLeased) {
      const data = event.data as unknown as RunLeasedData;
      attempts.push({
        attempt: data.attempt,
        workerId: data.workerId,
        leasedAt: data.leasedAt ?? event.recordedAt,
        outcome: undefined,
        endedAt: undefined,
        error: null,
      });
      continue;
    }
    const open = attempts[attempts.length - 1];
    if (open === undefined || open.outcome !== undefined) continue;
    const end = (outcome: string, error: string | null): void => {
      attempts[attempts.length - 1] = { ...open, outcome, endedAt: event.recordedAt, error };
    };
    if (event.type === RunEventType.RunSucceeded) end('succeeded', null);
    else if (event.type === RunEventType.RunFailed) end('failed', (event.data as unknown as RunFailedData).error);
    else if (event.type === RunEventType.LeaseExpired)
      end('lease expired', `no heartbeat before ${(event.data as unknown as LeaseExpiredData).expiredAt}`);
    else if (event.type === RunEventType.RunCancelled) end('cancelled', null);
  }
  return attempts;
}

/** The one-line gist of an event's data on the timeline. */
export function eventSummary(event: RunEvent): string {
  const d = event.data;
  const text = (key: string): string | undefined =>
    typeof d[key] === 'string' || typeof d[key] === 'number' ? String(d[key]) : undefined;
  switch (event.type) {
    case RunEventType.RunScheduled:
      return `due ${text('dueAt') ?? '?'}, source ${text('source') ?? '?'}`;
    case RunEventType.RunLeased:
      return `attempt ${text('attempt') ?? '?'} by ${text('workerId') ?? '?'}, fencing token ${text('fencingToken') ?? '?'}`;
    case RunEventType.LeaseExtended:
      return `lease until ${text('leaseExpiresAt') ?? '?'}`;
    case RunEventType.RunFailed:
      return `${text('error') ?? 'no error message'}${d['retryAt'] == null ? '' : `; retry at ${text('retryAt')}`}`;
    case RunEventType.LeaseExpired:
      return d['retryAt'] == null ? 'no attempts left' : `retry at ${text('retryAt')}`;
    case RunEventType.RunDead:
      return `${text('reason') ?? ''}${d['lastError'] == null ? '' : `: ${text('lastError')}`}`;
    case RunEventType.RunCancelled:
      return text('reason') ?? 'on request';
    case RunEventType.RunReplayed:
      return `attempts allowed up to ${text('attemptLimit') ?? '?'}`;
    default:
      return '';
  }
}
