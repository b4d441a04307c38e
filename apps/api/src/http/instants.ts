import { isISO8601 } from 'class-validator';
import { ApiQuery } from '@nestjs/swagger';
import { DomainError } from '@chronicle/domain';

/** The rule every instant the API takes follows (bodies, queries, GraphQL's DateTime): strict ISO 8601. */
export function isInstant(value: unknown): value is string {
  return typeof value === 'string' && isISO8601(value, { strict: true, strictSeparator: true });
}

/** A query parameter's instant, or a validation-error naming it; undefined when not given. */
export function optionalInstant(value: string | undefined, field: string): Date | undefined {
  if (value === undefined) return undefined;
  if (!isInstant(value))
    throw new DomainError('validation-error', `${field} must be an ISO 8601 instant, like 2026-03-15T01:00:00Z`, {
      field,
    });
  return new Date(value);
}

/** The `?asOf=` query parameter, in the OpenAPI document. */
export const AS_OF = ApiQuery({
  name: 'asOf',
  required: false,
  description: 'an instant: the state as the events recorded by then fold it (404 before it existed)',
  schema: { type: 'string', format: 'date-time', example: '2026-03-15T01:00:00Z' },
});

export interface AsOfFields {
  readonly asOf: string;
  readonly revision: number;
}

export function asOfFields(asOf: Date, revision: number): AsOfFields {
  return { asOf: asOf.toISOString(), revision };
}
