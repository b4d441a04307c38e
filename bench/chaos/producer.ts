import { randomUUID } from 'node:crypto';
import type { Enqueue } from './reconcile';

export interface ProducerOptions {
  readonly baseUrl: string;
  readonly token: string;
  /** Enqueued to in turn. */
  readonly jobs: readonly string[];
  /** Enqueues a second. */
  readonly rate: number;
  readonly signal: AbortSignal;
}

export interface ProducerReport {
  readonly enqueues: readonly Enqueue[];
  /** Answers other than 2xx that were retried (a process killed mid-call, PostgreSQL down, 429). */
  readonly retried: number;
  /** The retried answers by status (0: no answer, the call failed or took 10 s). */
  readonly retriedByStatus: Readonly<Record<string, number>>;
  /** Enqueues given up on after GIVE_UP_MS: their job, when first sent and the last answer. */
  readonly unanswered: readonly string[];
  /** 4xx answers that were not retried: the producer's own mistake, shown in the table. */
  readonly refused: readonly string[];
}

/** How long one enqueue is retried, with its Idempotency-Key, before it counts as never answered. */
const GIVE_UP_MS = 60_000;
const DUPLICATE_SHARE = 0.1;
const DELAYED_SHARE = 0.3;
const MAX_DELAY_SECONDS = 20;

/**
 * One-off and delayed runs over HTTP, as a client that wants each run exactly once: every enqueue
 * has an Idempotency-Key and is retried with it until answered 2xx; a tenth are sent twice on
 * purpose, the second time right after the first is answered. Runs until `signal` aborts.
 */
export async function produce(options: ProducerOptions): Promise<ProducerReport> {
  const enqueues: Enqueue[] = [];
  const inFlight = new Set<Promise<void>>();
  const counts = { retried: 0 };
  const retriedByStatus: Record<string, number> = {};
  const refused: string[] = [];
  const unanswered: string[] = [];
  const send = async (job: string, key: string, body: object): Promise<string | undefined> => {
    const sentAt = new Date();
    const deadline = sentAt.getTime() + GIVE_UP_MS;
    let last = '';
    for (let wait = 100; Date.now() < deadline; wait = Math.min(wait * 2, 2_000)) {
      const answer = await fetch(`${options.baseUrl}/v1/jobs/${job}/runs`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${options.token}`,
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      }).then(
        async (response) => ({ status: response.status, body: (await response.json().catch(() => null)) as unknown }),
        () => ({ status: 0, body: null }),
      );
      if (answer.status === 200 || answer.status === 201) return (answer.body as { runId: string }).runId;
      if (answer.status >= 400 && answer.status < 500 && answer.status !== 429 && answer.status !== 408) {
        refused.push(`${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
        return undefined;
      }
      counts.retried++;
      retriedByStatus[answer.status] = (retriedByStatus[answer.status] ?? 0) + 1;
      last = `${answer.status} ${JSON.stringify(answer.body).slice(0, 160)}`;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
    unanswered.push(`${job}, sent at ${sentAt.toISOString()}: last ${last}`);
    return undefined;
  };
  const one = async (n: number): Promise<void> => {
    const job = options.jobs[n % options.jobs.length]!;
    const key = `chaos-${randomUUID()}`;
    const body = {
      payload: { n },
      ...(Math.random() < DELAYED_SHARE ? { delaySeconds: 1 + Math.floor(Math.random() * MAX_DELAY_SECONDS) } : {}),
    };
    const enqueue = { idempotencyKey: key, runIds: [] as string[] };
    enqueues.push(enqueue);
    const first = await send(job, key, body);
    if (first !== undefined) enqueue.runIds.push(first);
    if (Math.random() < DUPLICATE_SHARE) {
      const again = await send(job, key, body);
      if (again !== undefined) enqueue.runIds.push(again);
    }
  };
  for (let n = 0; !options.signal.aborted; n++) {
    const call = one(n).finally(() => inFlight.delete(call));
    inFlight.add(call);
    await new Promise((resolve) => setTimeout(resolve, 1000 / options.rate));
  }
  await Promise.all(inFlight);
  return { enqueues, retried: counts.retried, retriedByStatus, refused, unanswered };
}
