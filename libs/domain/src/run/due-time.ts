import { DomainError } from '../domain-error';

/**
 * When a new run is due: at `runAt`, after `delaySeconds`, or (neither) now; never both. Null is "not
 * given", as the API's optional fields take it.
 */
export function dueTimeOf(
  request: { readonly runAt?: string | null; readonly delaySeconds?: number | null },
  now: Date,
  where = '',
): Date {
  const { runAt, delaySeconds } = request;
  if (runAt != null && delaySeconds != null)
    throw new DomainError('validation-error', `${where}give runAt or delaySeconds, not both`);
  return runAt != null ? new Date(runAt) : new Date(now.getTime() + (delaySeconds ?? 0) * 1000);
}
