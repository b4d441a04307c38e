import type { RecordedEvent } from '@chronicle/event-store';

export interface AttemptView {
  readonly attempt: number;
  readonly workerId: string | null;
  readonly startedAt: string;
  readonly endedAt: string | null;
  readonly outcome: 'success' | 'failure' | 'lease_expired' | 'running';
  readonly error: string | null;
}

/** Each attempt of a run, read from its events: who ran it, when, and how it ended. */
export function attemptHistory(events: readonly RecordedEvent[]): AttemptView[] {
  const attempts: AttemptView[] = [];
  for (const event of events) {
    const data = event.data as Record<string, unknown>;
    const current = attempts[attempts.length - 1];
    switch (event.type) {
      case 'RunLeased':
        attempts.push({
          attempt: Number(data['attempt']),
          workerId: (data['workerId'] as string | undefined) ?? null,
          startedAt: String(data['leasedAt']),
          endedAt: null,
          outcome: 'running',
          error: null,
        });
        break;
      case 'RunSucceeded':
      case 'RunFailed':
      case 'LeaseExpired':
        if (current === undefined) break;
        attempts[attempts.length - 1] = {
          ...current,
          endedAt: String(data['completedAt'] ?? data['failedAt'] ?? data['expiredAt']),
          outcome: event.type === 'RunSucceeded' ? 'success' : event.type === 'RunFailed' ? 'failure' : 'lease_expired',
          error: event.type === 'RunFailed' ? ((data['error'] as string | null) ?? null) : null,
        };
        break;
      default:
        break;
    }
  }
  return attempts;
}
