import { DomainError } from './domain-error';

/* Every name and id the API accepts, defined once: DTO validation and path parsing use these. */

/**
 * Job and queue names: 1-200 characters, no slashes or colons (a colon in a path starts a custom method,
 * `/v1/jobs/{name}:pause`: docs/api.md, "Conventions").
 */
export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
export const NAME_RULE = 'a name of 1-200 characters: letters, digits, . _ -, starting with a letter or digit';

/** Team ids: lower case, they appear in actors and metrics. */
export const TEAM_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
export const TEAM_ID_RULE = '1-63 characters of a-z, 0-9, _ and -, starting with a letter or digit';

/** Run ids as the scheduler makes them (`run_` and base64url). */
export const RUN_ID_PATTERN = /^run_[A-Za-z0-9_-]{1,64}$/;

/** An Idempotency-Key, header or batch field. */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,200}$/;
export const IDEMPOTENCY_KEY_RULE = '1-200 visible ASCII characters';

export function parseName(value: string, what: string): string {
  if (!NAME_PATTERN.test(value)) throw new DomainError('validation-error', `${what} must be ${NAME_RULE}`);
  return value;
}

/** A run id from a path: one that cannot exist is simply not found. */
export function parseRunId(value: string): string {
  if (!RUN_ID_PATTERN.test(value)) throw new DomainError('not-found', `run ${value.slice(0, 80)} not found`);
  return value;
}

export function parseIdempotencyKey(value: string | undefined): string | undefined {
  if (value !== undefined && !IDEMPOTENCY_KEY_PATTERN.test(value))
    throw new DomainError('validation-error', `Idempotency-Key must be ${IDEMPOTENCY_KEY_RULE}`);
  return value;
}

/** `name:action` of a custom method; an unknown action is an unknown route. */
export function splitAction<A extends string>(value: string, actions: readonly A[]): { name: string; action: A } {
  const colon = value.lastIndexOf(':');
  const action = actions.find((a) => a === value.slice(colon + 1));
  if (colon <= 0 || action === undefined)
    throw new DomainError(
      'not-found',
      `no such method :${value.slice(colon + 1)}; expected one of ${actions.map((a) => `:${a}`).join(', ')}`,
    );
  return { name: parseName(value.slice(0, colon), 'name'), action };
}
