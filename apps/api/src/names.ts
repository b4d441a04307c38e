import { ProblemError, problemType } from '../../../libs/platform/src/http/problem-details.filter';

/** Job and queue names: 1-200 characters, no slashes or colons (the `:action` suffix of reference 4.1). */
export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

const invalid = (detail: string): ProblemError => new ProblemError(400, problemType('validation-error'), 'validation error', detail);
const notFound = (detail: string): ProblemError => new ProblemError(404, problemType('not-found'), 'not found', detail);

export function parseName(value: string, what: string): string {
  if (!NAME_PATTERN.test(value)) throw invalid(`${what} must be 1-200 characters of letters, digits, . _ - starting with a letter or digit`);
  return value;
}

/** `name:action` of a custom method; an unknown action is an unknown route. */
export function splitAction<A extends string>(value: string, actions: readonly A[]): { name: string; action: A } {
  const colon = value.lastIndexOf(':');
  const action = actions.find((a) => a === value.slice(colon + 1));
  if (colon <= 0 || action === undefined) throw notFound(`no such method :${value.slice(colon + 1)}; expected one of ${actions.map((a) => `:${a}`).join(', ')}`);
  return { name: parseName(value.slice(0, colon), 'name'), action };
}
