import { errorFromProblem } from './errors';
import type { CompleteRequest, CompleteResponse } from './protocol';
import type { SchedulerClient } from './scheduler-client';

/** The server's most per call. */
const MAX_PER_CALL = 100;

interface Pending {
  readonly runId: string;
  readonly request: CompleteRequest;
  resolve(response: CompleteResponse): void;
  reject(error: unknown): void;
}

/**
 * Completions sent together: the ones that finish in the same turn of the
 * event loop go in one `POST /v1/runs:complete` (at most 100), one
 * transaction on the server instead of one each. Each caller still gets its
 * own answer: its state, or its own error (StaleLeaseError for a stale
 * token); a failed call fails all of its completions, which their callers
 * retry as they would a single one.
 */
export class CompletionBatcher {
  private pending: Pending[] = [];
  private flushScheduled = false;

  constructor(private readonly client: Pick<SchedulerClient, 'completeMany'>) {}

  complete(runId: string, request: CompleteRequest): Promise<CompleteResponse> {
    return new Promise((resolve, reject) => {
      this.pending.push({ runId, request, resolve, reject });
      if (this.pending.length >= MAX_PER_CALL) this.flush();
      else this.scheduleFlush();
    });
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      while (this.pending.length > 0) this.flush();
    });
  }

  private flush(): void {
    const batch = this.pending.splice(0, MAX_PER_CALL);
    if (batch.length === 0) return;
    this.client.completeMany({ completions: batch.map(({ runId, request }) => ({ runId, ...request })) }).then(
      ({ results }) =>
        batch.forEach((pending, i) => {
          const result = results[i];
          if (result === undefined || result.runId !== pending.runId)
            pending.reject(new Error(`the server answered no result for run ${pending.runId}`));
          else if (result.problem !== undefined)
            pending.reject(
              errorFromProblem(result.problem.status, result.problem as unknown as Record<string, unknown>),
            );
          else pending.resolve({ runId: result.runId, state: result.state ?? 'unknown' });
        }),
      (error: unknown) => batch.forEach((pending) => pending.reject(error)),
    );
  }
}
