import { createHmac } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Completion } from '@chronicle/commands';
import { MAX_RETRY_AFTER_SECONDS } from '@chronicle/domain';
import { type OutboundGuard, RefusedTarget } from './outbound-guard';

/*
 * One call of an HTTP-target job's run (docs/api.md, "HTTP-target jobs"): the run POSTed, signed, to the
 * target, redirects followed (each checked as the first call was), the answer read as an outcome.
 */

/** What the target is told of the run: the body's fields, and the headers beside it. */
export interface TargetDelivery {
  readonly url: string;
  readonly runId: string;
  readonly job: string;
  readonly attempt: number;
  readonly idempotencyKey: string;
  readonly fencingToken: number;
  readonly dryRun: boolean;
  readonly payload: unknown;
  /** The job's valid signing secrets, the current first: one signature by each. */
  readonly secrets: readonly string[];
  readonly traceparent?: string;
  readonly tracestate?: string;
}

/** What came of a call, as `chronicle_http_target_calls_total` counts it. */
export type CallResult = '2xx' | '3xx' | '4xx' | '5xx' | 'timeout' | 'refused' | 'error';

/** How a call went: the run's completion as it says it, and what came of the call. */
export type TargetOutcome = Pick<Completion, 'outcome' | 'error' | 'retryable' | 'retryAfterSeconds'> & {
  readonly result: CallResult;
};

/** A failure that no retry can help (a refusal, a redirect not followed). */
export const fatal = (error: string, result: CallResult): TargetOutcome => ({
  outcome: 'failure',
  error,
  retryable: false,
  result,
});

/** A chain of redirects longer than this is refused. */
const MAX_REDIRECTS = 5;
/** Of a failed call's answer, this much goes into the run's error. */
const ERROR_BODY_BYTES = 500;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** Kept-alive connections, each to an address the guard checked when it was made. */
const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };

/**
 * `Chronicle-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>]`: HMAC-SHA256 of `<t>.<body>` by each valid
 * secret. A receiver checks that one v1 matches its secret and that t is recent (it refuses replays).
 */
export function signatureHeader(secrets: readonly string[], timestamp: number, body: string): string {
  const signed = `${timestamp}.${body}`;
  const signatures = secrets.map((secret) => `v1=${createHmac('sha256', secret).update(signed).digest('hex')}`);
  return [`t=${timestamp}`, ...signatures].join(',');
}

export async function callTarget(
  guard: OutboundGuard,
  delivery: TargetDelivery,
  signal: AbortSignal,
  now: () => Date = () => new Date(),
): Promise<TargetOutcome> {
  const body = JSON.stringify({
    runId: delivery.runId,
    job: delivery.job,
    attempt: delivery.attempt,
    idempotencyKey: delivery.idempotencyKey,
    fencingToken: delivery.fencingToken,
    dryRun: delivery.dryRun,
    payload: delivery.payload,
  });
  const timestamp = Math.floor(now().getTime() / 1000);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'chronicle-scheduler',
    'idempotency-key': delivery.idempotencyKey,
    'chronicle-run-id': delivery.runId,
    'chronicle-attempt': String(delivery.attempt),
    'chronicle-fencing-token': String(delivery.fencingToken),
    'chronicle-signature': signatureHeader(delivery.secrets, timestamp, body),
    ...(delivery.traceparent === undefined ? {} : { traceparent: delivery.traceparent }),
    ...(delivery.tracestate === undefined ? {} : { tracestate: delivery.tracestate }),
  };
  let url = new URL(delivery.url);
  try {
    for (let hop = 0; ; hop++) {
      const answer = await post(guard, url, headers, body, signal);
      if (!REDIRECTS.has(answer.status)) return outcomeOf(answer, now());
      const location = answer.headers['location'];
      if (location === undefined) return outcomeOf(answer, now());
      if (hop === MAX_REDIRECTS) return fatal(`more than ${MAX_REDIRECTS} redirects`, '3xx');
      // The same POST to where it points, checked again: a redirect may not lead where the URL could not.
      url = new URL(location, url);
      if (url.protocol !== 'https:' && url.protocol !== 'http:')
        return fatal(`a redirect to ${url.protocol} refused`, 'refused');
    }
  } catch (err) {
    if (err instanceof RefusedTarget) return fatal(`refused: ${err.message}`, 'refused');
    if (signal.aborted) return { outcome: 'failure', retryable: true, ...abortedBecause(signal) };
    const code = (err as NodeJS.ErrnoException).code;
    return {
      outcome: 'failure',
      error: `the call failed: ${code === undefined ? (err as Error).message : `${code} ${(err as Error).message}`}`,
      retryable: true,
      result: 'error',
    };
  }
}

interface Answer {
  readonly status: number;
  readonly statusText: string;
  readonly headers: IncomingMessage['headers'];
  /** The first ERROR_BODY_BYTES of the body. */
  readonly text: string;
}

/** One POST to `url`, connected to the address the guard checked. */
async function post(
  guard: OutboundGuard,
  url: URL,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal,
): Promise<Answer> {
  const { lookup } = await guard.pin(url);
  const https = url.protocol === 'https:';
  return new Promise<Answer>((resolve, reject) => {
    const req = (https ? httpsRequest : httpRequest)(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        agent: https ? agents.https : agents.http,
        lookup,
        signal,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        res.on('data', (chunk: Buffer) => {
          if (kept < ERROR_BODY_BYTES) chunks.push(chunk);
          kept += chunk.length;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            statusText: res.statusMessage ?? '',
            headers: res.headers,
            text: Buffer.concat(chunks).subarray(0, ERROR_BODY_BYTES).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** 2xx succeeds; 408, 429 and 5xx are worth another try; any other answer is the request's fault. */
function outcomeOf(answer: Answer, now: Date): TargetOutcome {
  const { status } = answer;
  const result = `${Math.min(Math.max(Math.floor(status / 100), 2), 5)}xx` as CallResult;
  if (status >= 200 && status < 300) return { outcome: 'success', error: null, retryable: false, result };
  const retryable = status === 408 || status === 429 || status >= 500;
  const retryAfterSeconds = retryable ? retryAfterOf(answer.headers['retry-after'], now) : undefined;
  const said = answer.text.trim();
  return {
    outcome: 'failure',
    result,
    error: `HTTP ${status}${answer.statusText === '' ? '' : ` ${answer.statusText}`}${said === '' ? '' : `: ${said}`}`,
    retryable,
    ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
  };
}

/** `Retry-After`: seconds, or an HTTP date; at most a day (the decider's bound). Malformed: none. */
export function retryAfterOf(value: string | undefined, now: Date): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  const seconds = /^\d+$/.test(text) ? Number(text) : (Date.parse(text) - now.getTime()) / 1000;
  if (!Number.isFinite(seconds)) return undefined;
  return Math.min(Math.max(Math.ceil(seconds), 0), MAX_RETRY_AFTER_SECONDS);
}

function abortedBecause(signal: AbortSignal): { error: string; result: CallResult } {
  // A timeout's reason is a DOMException named TimeoutError; a stop's, an Error saying why.
  const reason = signal.reason as { name?: unknown; message?: unknown } | undefined;
  return reason?.name === 'TimeoutError'
    ? { error: 'no answer within the timeout', result: 'timeout' }
    : {
        error: `the call was stopped: ${typeof reason?.message === 'string' ? reason.message : String(reason)}`,
        result: 'error',
      };
}
