/** The Gregorian calendar repeats itself every 400 years (146,097 days, a whole number of weeks): dates, weekdays, week numbers. */
export const CYCLE_YEARS = 400;

/** rrule's last year: RRULE fire times end with it. */
export const LAST_RRULE_YEAR = 9999;

/** The last whole year a Date holds (they end in September 275760): cron fire times end with it. */
export const LAST_DATE_YEAR = 275_759;

const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
/** The most days each month has, 29 February included. */
export const MOST_MONTH_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] as const;

export function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

export function daysInMonth(year: number, month: number): number {
  return month === 2 && isLeapYear(year) ? 29 : MONTH_DAYS[month - 1]!;
}

/** Date.UTC of a date, for every year (Date.UTC reads the years 0 to 99 as 1900 to 1999). */
export function utcDay(year: number, month: number, day: number): number {
  return year >= 100 ? Date.UTC(year, month - 1, day) : new Date(0).setUTCFullYear(year, month - 1, day);
}
