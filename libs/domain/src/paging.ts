import { DomainError } from './domain-error';

/** The listings' pages (REST `limit`, GraphQL `first`): at most this many items. */
export const MAX_PAGE_SIZE = 500;
export const DEFAULT_PAGE_SIZE = 50;

/** A page size as asked (`field` names the parameter): absent is the default, out of range is refused. */
export function pageSize(asked: number | null | undefined, field: string): number {
  if (asked == null) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(asked) || asked < 1 || asked > MAX_PAGE_SIZE)
    throw new DomainError('validation-error', `${field} must be a whole number from 1 to ${MAX_PAGE_SIZE}`, {
      field,
    });
  return asked;
}
