import { ApiQuery } from '@nestjs/swagger';
import { DomainError } from '@chronicle/domain';

/*
 * The rule every instant the API takes follows (bodies, queries, GraphQL's DateTime): ISO 8601 with a `T`
 * between date and time, its date a real one, as validator.js's isISO8601 with `strict` and
 * `strictSeparator` has it (MIT licence, copyright Chris O'Hara; class-validator's
 * @IsISO8601({ strict: true, strictSeparator: true }) applied it before), and one that JavaScript's Date
 * reads: a week date (2026-W05-3), an ordinal one (2026-075) or a bare `T` would be an Invalid Date.
 */
const YEAR = String.raw`[+-]?\d{4}(?!\d{2}\b)`;
const CALENDAR_DATE = String.raw`(?:0[1-9]|1[0-2])(?:\k<dateSeparator>(?:[12]\d|0[1-9]|3[01]))?`;
const WEEK_DATE = String.raw`W(?:[0-4]\d|5[0-3])(?:-?[1-7])?`;
const ORDINAL_DATE = String.raw`(?:00[1-9]|0[1-9]\d|[12]\d{2}|3(?:[0-5]\d|6[1-6]))`;
const HOURS_MINUTES = String.raw`(?:(?:[01]\d|2[0-3])(?:(?<timeSeparator>:?)[0-5]\d)?|24:?00)(?:[.,]\d+(?!:))?`;
const SECONDS = String.raw`\k<timeSeparator>[0-5]\d(?:[.,]\d+)?`;
const ZONE = String.raw`[zZ]|[+-](?:[01]\d|2[0-3]):?(?:[0-5]\d)?`;
const TIME = `T(?:${HOURS_MINUTES})?(?:${SECONDS})?(?:${ZONE})?`;
const ISO_8601 = new RegExp(
  `^${YEAR}(?:(?<dateSeparator>-?)(?:${CALENDAR_DATE}|${WEEK_DATE}|${ORDINAL_DATE})(?:${TIME})?)?$`,
);

/** The date of an ISO 8601 string exists: no 2026-02-30, no 366th day of 2026. */
function isRealDate(text: string): boolean {
  const ordinal = /^(\d{4})-?(\d{3})([ T]\.*|$)/.exec(text);
  if (ordinal !== null) {
    const year = Number(ordinal[1]);
    const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
    return Number(ordinal[2]) <= (leap ? 366 : 365);
  }
  const [, year = 0, month = 0, day = 0] = (/(\d{4})-?(\d{0,2})-?(\d*)/.exec(text) ?? []).map(Number);
  if (month === 0 || day === 0) return true;
  const twoDigits = (n: number): string => String(n).padStart(2, '0').slice(-2);
  const date = new Date(`${year}-${twoDigits(month)}-${twoDigits(day)}`);
  return date.getUTCFullYear() === year && date.getUTCMonth() + 1 === month && date.getUTCDate() === day;
}

/** An instant as the API takes one: strict ISO 8601, like 2026-03-15T01:00:00Z, that `new Date` reads. */
export function isInstant(value: unknown): value is string {
  return typeof value === 'string' && ISO_8601.test(value) && isRealDate(value) && !Number.isNaN(Date.parse(value));
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
