/** The problem type the server answers (409) when a fencing token is no longer the run's current one. */
export const STALE_LEASE_PROBLEM = '/problems/stale-lease';

/** A non-2xx answer of the scheduler, from its RFC 9457 problem details. */
export class SchedulerApiError extends Error {
  constructor(
    readonly status: number,
    /** The problem's `type`, e.g. `/problems/validation-error`; `about:blank` when the body had none. */
    readonly problemType: string,
    readonly title: string,
    readonly detail: string,
  ) {
    super(`${status} ${title}${detail === '' ? '' : `: ${detail}`}`);
    this.name = 'SchedulerApiError';
  }
}

/** The run is no longer ours: another worker holds it, or it was cancelled or its lease expired. */
export class StaleLeaseError extends SchedulerApiError {
  constructor(status: number, problemType: string, title: string, detail: string) {
    super(status, problemType, title, detail);
    this.name = 'StaleLeaseError';
  }
}

/**
 * Thrown by a handler when retrying cannot help (bad payload, a rejected
 * request): the run is completed with `retryable: false` and goes to the DLQ.
 */
export class NonRetryableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NonRetryableError';
  }
}

/** The longest wait a failure may ask for before its retry, as the server bounds it (a day). */
export const MAX_RETRY_AFTER_SECONDS = 86_400;

/**
 * Thrown by a handler when a downstream said when to try again (a 429 or 503 with `Retry-After`): the run
 * is retried after `retryAfterSeconds` (whole seconds, at most a day) instead of the job's backoff, while
 * it has attempts left.
 */
export class RetryLaterError extends Error {
  readonly retryAfterSeconds: number;

  constructor(message: string, retryAfterSeconds: number, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RetryLaterError';
    this.retryAfterSeconds = Math.min(Math.max(Math.ceil(retryAfterSeconds), 0), MAX_RETRY_AFTER_SECONDS);
  }
}

// Accepts the bare slug (`stale-lease`) and absolute URIs too; the server's
// filter renders `/problems/stale-lease`.
function isStaleLease(problemType: string): boolean {
  return problemType === 'stale-lease' || problemType.endsWith('/stale-lease');
}

/** Reads a failed response's problem details; tolerates a body that is not one. */
export async function errorFromResponse(response: Response): Promise<SchedulerApiError> {
  const text = await response.text().catch(() => '');
  let problem: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed !== null && typeof parsed === 'object') problem = parsed as Record<string, unknown>;
  } catch {
    // A proxy's HTML error page, say: keep its start as the detail.
  }
  return errorFromProblem(response.status, problem, response.statusText || 'error', text.slice(0, 500));
}

/** The error for a problem: the whole answer's, or one run's in a batch answer. */
export function errorFromProblem(
  status: number,
  problem: Readonly<Record<string, unknown>>,
  fallbackTitle = 'error',
  fallbackDetail = '',
): SchedulerApiError {
  const field = (name: string): string | undefined =>
    typeof problem[name] === 'string' ? (problem[name] as string) : undefined;
  const problemType = field('type') ?? 'about:blank';
  const title = field('title') ?? fallbackTitle;
  const detail = field('detail') ?? (field('type') === undefined ? fallbackDetail : '');
  const ErrorClass = isStaleLease(problemType) ? StaleLeaseError : SchedulerApiError;
  return new ErrorClass(status, problemType, title, detail);
}

/** Worth retrying: the network, a timeout, or a server that is overloaded or failing. */
export function isTransient(error: unknown): boolean {
  if (!(error instanceof SchedulerApiError)) return true;
  return error.status >= 500 || error.status === 408 || error.status === 429;
}
