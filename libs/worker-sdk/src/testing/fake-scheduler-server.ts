import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type FakeRunState = 'ready' | 'leased' | 'succeeded' | 'failed' | 'cancelled';

export interface FakeRun {
  readonly runId: string;
  readonly job: string;
  readonly queue: string;
  readonly idempotencyKey: string;
  readonly payload: unknown;
  readonly dryRun: boolean;
  /** Date.now() ms it is due at (0: at once). */
  readonly dueAtMs: number;
  attempt: number;
  state: FakeRunState;
  fencingToken: number;
  leaseExpiresAtMs: number;
}

export interface RecordedCall {
  readonly kind: 'lease' | 'heartbeat' | 'complete';
  readonly runId: string | undefined;
  readonly body: Record<string, unknown>;
  /** Date.now() when the request arrived. */
  readonly at: number;
  /** Runs leased and not completed when the call arrived. */
  readonly outstanding: number;
  status: number;
  /** The client gave up on the request (an aborted long poll). */
  clientAborted: boolean;
}

const ROUTE = /^\/v1\/(?:(lease)|runs\/([^/]+)\/(heartbeat|complete)|runs:(complete|heartbeat))$/;

/**
 * The worker protocol over real HTTP, in memory, for SDK tests:
 * increasing fencing tokens, long-polled leases, 409 stale-lease, and a
 * record of every call. Takes fractional leaseSeconds (the real server does not).
 */
export class FakeSchedulerServer {
  readonly token = 'test-worker-token';
  readonly calls: RecordedCall[] = [];
  readonly runs = new Map<string, FakeRun>();
  /** `POST /v1/runs:complete` calls (their completions are recorded one by one in calls). */
  completeManyCalls = 0;
  /** `POST /v1/runs:complete` calls that also leased (their leases are recorded as lease calls). */
  leasingCompleteManyCalls = 0;
  /** Runs leased by completion calls. */
  leasedWithCompletions = 0;
  /** `POST /v1/runs:heartbeat` calls (their heartbeats are recorded one by one in calls). */
  heartbeatManyCalls = 0;
  /** Leases that lapsed without a heartbeat; a healthy worker keeps this at 0. */
  expiredLeases = 0;
  private lastToken = 0;
  private readonly waiters = new Set<() => void>();
  private readonly faults: { kind: RecordedCall['kind']; status: number; remaining: number }[] = [];
  /** While set, completion calls wait for it: a server slow to answer completions. */
  private completionsHeld: Promise<void> | undefined;
  private releaseHeld: (() => void) | undefined;

  private constructor(private readonly server: Server) {}

  static async start(): Promise<FakeSchedulerServer> {
    const server = createServer();
    const fake = new FakeSchedulerServer(server);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => void fake.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return fake;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  enqueue(
    run: {
      payload?: unknown;
      job?: string;
      queue?: string;
      idempotencyKey?: string;
      attempt?: number;
      dryRun?: boolean;
      /** When it is due (Date.now() ms); default now. A lease takes it this much ahead with its prefetchMs. */
      dueAtMs?: number;
    } = {},
  ): FakeRun {
    const runId = `run-${this.runs.size + 1}`;
    const queued: FakeRun = {
      runId,
      job: run.job ?? 'billing.export',
      queue: run.queue ?? 'billing',
      idempotencyKey: run.idempotencyKey ?? `key-${runId}`,
      payload: run.payload ?? null,
      dryRun: run.dryRun ?? false,
      attempt: run.attempt ?? 1,
      dueAtMs: run.dueAtMs ?? 0,
      state: 'ready',
      fencingToken: 0,
      leaseExpiresAtMs: 0,
    };
    this.runs.set(runId, queued);
    this.notify();
    return queued;
  }

  /** Another worker takes the run over: the current holder's fencing token is stale from now on. */
  reassign(runId: string): void {
    const run = this.runs.get(runId)!;
    run.fencingToken = ++this.lastToken;
  }

  /** The next `count` calls of this kind answer `status` with a problem body. */
  failNext(kind: RecordedCall['kind'], count: number, status = 500): void {
    this.faults.push({ kind, status, remaining: count });
  }

  /** Completion calls wait, unanswered, until releaseCompletions(). */
  holdCompletions(): void {
    this.completionsHeld ??= new Promise((resolve) => (this.releaseHeld = resolve));
  }

  releaseCompletions(): void {
    this.releaseHeld?.();
    this.completionsHeld = undefined;
  }

  callsOf(kind: RecordedCall['kind'], runId?: string): RecordedCall[] {
    return this.calls.filter((call) => call.kind === kind && (runId === undefined || call.runId === runId));
  }

  async close(): Promise<void> {
    this.releaseCompletions();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const match = ROUTE.exec(req.url ?? '');
    if (req.method !== 'POST' || match === null) return problem(res, 404, 'not-found', `${req.method} ${req.url}`);
    if (req.headers.authorization !== `Bearer ${this.token}`) return problem(res, 401, 'unauthorized', 'bad token');
    let body: Record<string, unknown>;
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    } catch {
      return problem(res, 400, 'validation-error', 'request body is not valid JSON');
    }
    const kind = (match[1] ?? match[3] ?? match[4]) as RecordedCall['kind'];
    const runId = match[2] === undefined ? undefined : decodeURIComponent(match[2]);
    const outstanding = [...this.runs.values()].filter((run) => run.state === 'leased').length;
    const call: RecordedCall = { kind, runId, body, at: Date.now(), outstanding, status: 0, clientAborted: false };
    this.calls.push(call);
    res.on('close', () => {
      if (!res.writableFinished) call.clientAborted = true;
      this.notify();
    });
    const fault = this.faults.find((candidate) => candidate.kind === kind && candidate.remaining > 0);
    if (fault !== undefined) {
      fault.remaining -= 1;
      call.status = fault.status;
      return problem(res, fault.status, 'internal-error', 'injected fault');
    }
    if (kind === 'complete') await this.completionsHeld;
    const [status, answer] =
      kind === 'lease'
        ? await this.lease(body, call)
        : match[4] !== undefined
          ? await this.settleMany(kind as 'heartbeat' | 'complete', body, call)
          : this.settle(kind, runId!, body);
    call.status = status;
    if (call.clientAborted) return;
    if (status !== 200) return problem(res, status, answer as string, `${kind} refused`);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
  }

  private async lease(body: Record<string, unknown>, call: RecordedCall): Promise<[number, unknown]> {
    const {
      queues,
      max,
      waitSeconds = 0,
      leaseSeconds = 30,
      prefetchMs = 0,
    } = body as { queues: string[]; max: number; waitSeconds?: number; leaseSeconds?: number; prefetchMs?: number };
    if (
      !Array.isArray(queues) ||
      queues.length === 0 ||
      !Number.isInteger(max) ||
      max < 1 ||
      max > 100 ||
      waitSeconds < 0 ||
      waitSeconds > 30 ||
      !(leaseSeconds > 0)
    )
      return [400, 'validation-error'];
    const deadline = Date.now() + waitSeconds * 1000;
    for (;;) {
      this.reapExpiredLeases();
      const ready = [...this.runs.values()]
        .filter((run) => run.state === 'ready' && queues.includes(run.queue) && run.dueAtMs <= Date.now() + prefetchMs)
        .slice(0, max);
      if (call.clientAborted) return [499, 'client-closed'];
      if (ready.length > 0 || Date.now() >= deadline) {
        const leases = ready.map((run) => {
          Object.assign(run, {
            state: 'leased',
            fencingToken: ++this.lastToken,
            leaseExpiresAtMs: Date.now() + leaseSeconds * 1000,
          });
          const { runId, job, attempt, idempotencyKey, fencingToken, payload, dryRun } = run;
          return {
            runId,
            job,
            attempt,
            idempotencyKey,
            fencingToken,
            leaseExpiresAt: new Date(run.leaseExpiresAtMs).toISOString(),
            ...(run.dueAtMs > Date.now() ? { notBefore: new Date(run.dueAtMs).toISOString() } : {}),
            payload,
            dryRun,
          };
        });
        return [200, { leases }];
      }
      await this.waitForChange(deadline - Date.now());
    }
  }

  /**
   * `POST /v1/runs:complete` and `:heartbeat`: each item settled alone, recorded as a call of its run;
   * a completion call's `lease` then leases as a lease call that does not wait, recorded as one.
   */
  private async settleMany(
    kind: 'heartbeat' | 'complete',
    body: Record<string, unknown>,
    call: RecordedCall,
  ): Promise<[number, unknown]> {
    const completions = body[kind === 'complete' ? 'completions' : 'heartbeats'] as Array<Record<string, unknown>>;
    if (kind === 'complete') this.completeManyCalls += 1;
    else this.heartbeatManyCalls += 1;
    this.calls.splice(this.calls.indexOf(call), 1);
    const results = completions.map((completion) => {
      const runId = String(completion['runId']);
      const [status, answer] = this.settle(kind, runId, completion);
      this.calls.push({
        ...call,
        runId,
        body: Object.fromEntries(Object.entries(completion).filter(([key]) => key !== 'runId')),
        status,
      });
      return status === 200
        ? { runId, ...(answer as Record<string, unknown>) }
        : {
            runId,
            problem: { type: `/problems/${String(answer)}`, title: String(answer), status, detail: `${kind} refused` },
          };
    });
    const lease = body['lease'] as Record<string, unknown> | undefined;
    if (kind !== 'complete' || lease === undefined) return [200, { results }];
    this.leasingCompleteManyCalls += 1;
    const outstanding = [...this.runs.values()].filter((run) => run.state === 'leased').length;
    const leaseCall: RecordedCall = { ...call, kind: 'lease', runId: undefined, body: lease, outstanding };
    this.calls.push(leaseCall);
    const [status, answer] = await this.lease({ ...lease, waitSeconds: 0 }, leaseCall);
    leaseCall.status = status;
    if (status !== 200) return [status, answer];
    const { leases } = answer as { leases: unknown[] };
    this.leasedWithCompletions += leases.length;
    return [200, { results, leases }];
  }

  private settle(kind: 'heartbeat' | 'complete', runId: string, body: Record<string, unknown>): [number, unknown] {
    this.reapExpiredLeases();
    const run = this.runs.get(runId);
    if (run === undefined) return [404, 'not-found'];
    if (run.state !== 'leased' || body['fencingToken'] !== run.fencingToken) return [409, 'stale-lease'];
    if (kind === 'heartbeat') {
      run.leaseExpiresAtMs = Date.now() + Number(body['leaseSeconds'] ?? 30) * 1000;
      return [200, { leaseExpiresAt: new Date(run.leaseExpiresAtMs).toISOString() }];
    }
    run.state = body['outcome'] === 'success' ? 'succeeded' : 'failed';
    this.notify();
    return [200, { runId, state: run.state === 'succeeded' ? 'succeeded' : 'retry_wait' }];
  }

  // The real reaper would move the run to retry_wait; ready again is enough here.
  private reapExpiredLeases(): void {
    for (const run of this.runs.values()) {
      if (run.state === 'leased' && run.leaseExpiresAtMs < Date.now()) {
        Object.assign(run, { state: 'ready', attempt: run.attempt + 1 });
        this.expiredLeases += 1;
      }
    }
  }

  private notify(): void {
    for (const wake of [...this.waiters]) wake();
  }

  private waitForChange(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, timeoutMs));
      this.waiters.add(done);
    });
  }
}

function problem(res: ServerResponse, status: number, slug: string, detail: string): void {
  res
    .writeHead(status, { 'content-type': 'application/problem+json' })
    .end(JSON.stringify({ type: `/problems/${slug}`, title: slug.replace(/-/g, ' '), status, detail }));
}
