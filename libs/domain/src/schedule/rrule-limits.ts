import { RRule, type Options } from 'rrule';

/*
 * What keeps a walk of rrule over a rule's occurrences bounded. rrule stops a walk at an occurrence
 * past the end asked for, or at the year 9999: a rule that matches nothing is walked period by period
 * to 9999 (11 s for a daily rule of 30 February), and a rule whose steps never land on its BYHOUR or
 * BYMINUTE is stepped for ever (FREQ=HOURLY;BYHOUR=25 held the API's event loop for good). Such rules
 * are refused when parsed, or, when only the calendar says they fire nowhere soon, not walked.
 */

/** Occurrences a rule with COUNT may have: it is walked from its DTSTART, every occurrence on the way. */
export const MAX_RRULE_COUNT = 10_000;
/** How early a counted rule may start, for the same reason. */
const EARLIEST_COUNTED_DTSTART = Date.UTC(1970, 0, 1);

export class RruleSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RruleSyntaxError';
  }
}

/** RFC 5545's ranges of the BY parts rrule takes as given (BYSETPOS it checks itself); negatives count from the end. */
const BY_RANGES = [
  ['bysecond', 'BYSECOND', 0, 60, false],
  ['byminute', 'BYMINUTE', 0, 59, false],
  ['byhour', 'BYHOUR', 0, 23, false],
  ['bymonth', 'BYMONTH', 1, 12, false],
  ['bymonthday', 'BYMONTHDAY', 1, 31, true],
  ['byyearday', 'BYYEARDAY', 1, 366, true],
  ['byweekno', 'BYWEEKNO', 1, 53, true],
] as const satisfies ReadonlyArray<readonly [keyof Options, string, number, number, boolean]>;

const MINUTES_A_WEEK = 7 * 24 * 60;
const STEP_MINUTES: Partial<Record<number, number>> = {
  [RRule.DAILY]: 24 * 60,
  [RRule.HOURLY]: 60,
  [RRule.MINUTELY]: 1,
};

/** Refuses a rule rrule would step through without end, or count through from far back. */
export function refuseEndlessWalk(rule: RRule): void {
  const given = rule.origOptions;
  const interval = given.interval ?? 1;
  if (!Number.isInteger(interval) || interval < 1) throw new RruleSyntaxError(`INTERVAL=${interval} is not 1 or more`);
  for (const [option, part, min, max, fromEnd] of BY_RANGES)
    for (const value of listOf(given[option]))
      if (!(value >= min && value <= max) && !(fromEnd && value <= -min && value >= -max))
        throw new RruleSyntaxError(
          `${part}=${value} is outside ${min} to ${max}${fromEnd ? ` or -${max} to -${min}` : ''}`,
        );
  if (given.byeaster !== undefined && given.byeaster !== null) throw new RruleSyntaxError('BYEASTER is not RFC 5545');
  const { freq, dtstart, count } = rule.options;
  if (count !== null && (count > MAX_RRULE_COUNT || dtstart.getTime() < EARLIEST_COUNTED_DTSTART))
    throw new RruleSyntaxError(`COUNT is counted from DTSTART: at most ${MAX_RRULE_COUNT}, from 1970 on`);
  // rrule steps an HOURLY rule through DTSTART's hour plus multiples of gcd(INTERVAL, 24) until one is
  // in BYHOUR, a MINUTELY one through DTSTART's minute plus multiples of gcd(INTERVAL, 60).
  const reaches = (values: number[], from: number, period: number): boolean =>
    values.some((value) => (((value - from) % gcd(interval, period)) + period) % period === 0);
  const hours = listOf(given.byhour);
  const minutes = listOf(given.byminute);
  if (freq === RRule.HOURLY && hours.length > 0 && !reaches(hours, dtstart.getUTCHours(), 24))
    throw new RruleSyntaxError(`FREQ=HOURLY;INTERVAL=${interval} from DTSTART never reaches BYHOUR=${hours.join(',')}`);
  if (freq === RRule.MINUTELY && minutes.length > 0 && !reaches(minutes, dtstart.getUTCMinutes(), 60))
    throw new RruleSyntaxError(
      `FREQ=MINUTELY;INTERVAL=${interval} from DTSTART never reaches BYMINUTE=${minutes.join(',')}`,
    );
  // Steps of an hour or more skip hours unevenly on the way to a BYHOUR: rrule may miss it for ever.
  if (freq === RRule.MINUTELY && hours.length > 0 && interval >= 60)
    throw new RruleSyntaxError(`FREQ=MINUTELY;INTERVAL=${interval} with BYHOUR: write it as FREQ=HOURLY`);
  // Steps of whole weeks stay on DTSTART's weekday.
  const step = STEP_MINUTES[freq];
  const weekdays = listOf(rule.options.byweekday);
  const startWeekday = (dtstart.getUTCDay() + 6) % 7; // rrule's weekdays: 0 is Monday
  if (
    step !== undefined &&
    (step * interval) % MINUTES_A_WEEK === 0 &&
    weekdays.length > 0 &&
    !weekdays.includes(startWeekday)
  )
    throw new RruleSyntaxError(`every INTERVAL=${interval} falls on DTSTART's weekday, never on BYDAY`);
}

/** The Gregorian calendar repeats itself every 400 years, weekdays and week numbers too. */
const CYCLE_YEARS = 400;
/** rrule's last year. */
const LAST_YEAR = 9999;

/**
 * Whether any day from `from` to `until` passes the rule's day filters (BYMONTH, BYMONTHDAY, BYYEARDAY,
 * BYWEEKNO, BYDAY): asked of a rule of the same filters that fires once a day, on the same dates some
 * 400-year cycles later, near 9999, where rrule's walk ends within a few years whatever it matches.
 */
export function passesSomeDay(rule: RRule, from: Date, until: Date): boolean {
  const given = rule.origOptions;
  const cycles = Math.max(0, Math.floor((LAST_YEAR - 10 - from.getUTCFullYear()) / CYCLE_YEARS));
  const later = (date: Date): Date => {
    const moved = new Date(date.getTime());
    moved.setUTCFullYear(date.getUTCFullYear() + cycles * CYCLE_YEARS);
    return moved;
  };
  // BYDAY's ordinals (1MO) count within a month or a year: kept for such rules, plain weekdays for the others.
  const yearly = rule.options.freq === RRule.YEARLY || rule.options.freq === RRule.MONTHLY;
  const probe = new RRule({
    freq: yearly ? rule.options.freq : RRule.YEARLY,
    dtstart: later(new Date(Date.UTC(from.getUTCFullYear(), 0, 1))),
    wkst: given.wkst ?? null,
    bymonth: given.bymonth ?? null,
    bymonthday: given.bymonthday ?? null,
    byyearday: given.byyearday ?? null,
    byweekno: given.byweekno ?? null,
    byweekday: yearly ? (given.byweekday ?? null) : rule.options.byweekday,
    byhour: 0,
    byminute: 0,
    bysecond: 0,
  });
  const first = probe.after(
    later(new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth(), from.getUTCDate()))),
    true,
  );
  return first !== null && first <= later(until);
}

function listOf(value: unknown): number[] {
  if (value === null || value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).filter((v): v is number => typeof v === 'number');
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}
