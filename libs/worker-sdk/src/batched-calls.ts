import { errorFromProblem } from './errors';
import type {
  AttemptTraceFields,
  CompleteManyRequest,
  CompleteManyResponse,
  CompleteRequest,
  CompleteResponse,
  HeartbeatManyResponse,
  HeartbeatResponse,
  LeasedRun,
  Problem,
} from './protocol';
import type { SchedulerClient } from './scheduler-client';

/** The server's most per call. */
const MAX_PER_CALL = 100;

interface Pending<Request, Answer> {
  readonly runId: string;
  readonly request: Request;
  resolve(answer: Answer): void;
  reject(error: unknown): void;
}

type ManyResults<Result> = {
  readonly results: ReadonlyArray<Result & { readonly runId: string; readonly problem?: Problem }>;
};

/**
 * Calls about many runs sent together: the ones made in the same turn of the
 * event loop go in one `POST /v1/runs:complete` or `:heartbeat` (at most 100),
 * one transaction on the server instead of one each. Each caller still gets
 * its own answer, or its own error (StaleLeaseError for a stale token); a
 * failed call fails all of its runs, which their callers retry as they would
 * a single one.
 */
export class BatchedCalls<Request, Result, Answer> {
  private pending: Array<Pending<Request, Answer>> = [];
  private flushScheduled = false;

  constructor(
    private readonly sendMany: (items: ReadonlyArray<Request & { runId: string }>) => Promise<ManyResults<Result>>,
    private readonly answerOf: (result: Result & { readonly runId: string }) => Answer,
  ) {}

  call(runId: string, request: Request): Promise<Answer> {
    return new Promise((resolve, reject) => {
      this.pending.push({ runId, request, resolve, reject });
      // Sent after this turn even when a call's worth is waiting: the worker's state (the slots that
      // runs finishing in this turn free) has settled by then, so a completion call leases for them.
      this.scheduleFlush();
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
    this.sendMany(batch.map(({ runId, request }) => ({ runId, ...request }))).then(
      ({ results }) =>
        batch.forEach((pending, i) => {
          const result = results[i];
          if (result === undefined || result.runId !== pending.runId)
            pending.reject(new Error(`the server answered no result for run ${pending.runId}`));
          else if (result.problem !== undefined)
            pending.reject(
              errorFromProblem(result.problem.status, result.problem as unknown as Record<string, unknown>),
            );
          else pending.resolve(this.answerOf(result));
        }),
      (error: unknown) => batch.forEach((pending) => pending.reject(error)),
    );
  }
}

/**
 * The worker's side of leasing through completions: asked, as each completion call goes out, what
 * to lease with it (nothing: undefined), and told what that call leased (nothing, if it failed).
 */
export interface LeaseWithCompletions {
  ask(): CompleteManyRequest['lease'] | undefined;
  received(leases: readonly LeasedRun[], asked: NonNullable<CompleteManyRequest['lease']>): void;
}

/** Completions of runs that finish together, in one `POST /v1/runs:complete`, which may lease the next runs. */
export class CompletionBatcher {
  private readonly calls: BatchedCalls<CompleteRequest, CompleteManyResponse['results'][number], CompleteResponse>;

  constructor(client: Pick<SchedulerClient, 'completeMany'>, leasing?: LeaseWithCompletions) {
    this.calls = new BatchedCalls(
      async (completions) => {
        const lease = leasing?.ask();
        if (lease === undefined) return client.completeMany({ completions });
        let answer: CompleteManyResponse | undefined;
        try {
          answer = await client.completeMany({ completions, lease });
          return answer;
        } finally {
          leasing!.received(answer?.leases ?? [], lease);
        }
      },
      (result) => ({ runId: result.runId, state: result.state ?? 'unknown' }),
    );
  }

  complete(runId: string, request: CompleteRequest): Promise<CompleteResponse> {
    return this.calls.call(runId, request);
  }
}

/** Heartbeats that fall due together, in one `POST /v1/runs:heartbeat`. */
export class HeartbeatBatcher {
  private readonly calls: BatchedCalls<
    { fencingToken: number; leaseSeconds?: number } & AttemptTraceFields,
    HeartbeatManyResponse['results'][number],
    HeartbeatResponse
  >;

  constructor(client: Pick<SchedulerClient, 'heartbeatMany'>) {
    this.calls = new BatchedCalls(
      (heartbeats) => client.heartbeatMany({ heartbeats }),
      (result) => ({ leaseExpiresAt: result.leaseExpiresAt ?? '' }),
    );
  }

  heartbeat(
    runId: string,
    fencingToken: number,
    leaseSeconds?: number,
    trace: AttemptTraceFields = {},
  ): Promise<HeartbeatResponse> {
    return this.calls.call(
      runId,
      leaseSeconds === undefined ? { fencingToken, ...trace } : { fencingToken, leaseSeconds, ...trace },
    );
  }
}
