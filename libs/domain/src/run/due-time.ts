import { DomainError } from '../domain-error';

/** When a new run is due: at `runAt`, after `delaySeconds`, or (neither) now; never both. */
export function dueTimeOf(
  request: { readonly runAt?: string; readonly delaySeconds?: number },
  now: Date,
  where = '',
): Date {
  if (request.runAt !== undefined && request.delaySeconds !== undefined)
    throw new DomainError('validation-error', `${where}give runAt or delaySeconds, not both`);
  return request.runAt !== undefined
    ? new Date(request.runAt)
    : new Date(now.getTime() + (request.delaySeconds ?? 0) * 1000);
}
