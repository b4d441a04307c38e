import { RunEventType } from '@chronicle/domain/vocabulary';
import type { RunEvent } from './api/operations';

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
    case RunEventType.RunDebounced:
      return `ready at ${text('availableAt') ?? '?'}, payload replaced`;
    default:
      return '';
  }
}
