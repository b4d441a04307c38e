import { RRule, type Options } from 'rrule';
import { CYCLE_YEARS, LAST_RRULE_YEAR, utcDay } from './calendar';

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
  // BYSETPOS picks from each period's occurrences; a position past them all never fires, and rrule walks every
  // period to 9999 looking (FREQ=DAILY;BYSETPOS=2: 10 s, FREQ=HOURLY: minutes). A week has at most its BYDAY
  // days, a day, an hour or a minute its times.
  const most = occurrencesAPeriod(rule);
  const positions = listOf(rule.options.bysetpos);
  if (most !== undefined && positions.length > 0 && positions.every((position) => Math.abs(position) > most))
    throw new RruleSyntaxError(`BYSETPOS=${positions.join(',')} is past the ${most} occurrences a period has`);
}

const EVERY_WEEKDAY = [0, 1, 2, 3, 4, 5, 6];

/** The days a rule's day filters pass: `next(day)` is the first passing day from `day` on (midnights, floating). */
export interface PassingDays {
  next(day: number): number | null;
}

/**
 * The days that pass a rule's day filters (BYMONTH, BYMONTHDAY, BYYEARDAY, BYWEEKNO, BYDAY, and the days a
 * yearly or monthly rule takes from DTSTART without them), found by a probe of the same filters that fires
 * once a day, on the same dates some 400-year cycles later, near 9999: rrule walks a probe until it passes
 * a day or to 9999, so a walk from there ends within one cycle and a few years, whatever the filters pass.
 * What passes no day in a whole cycle passes none ever. Answers are kept: a walk asks about the days
 * ahead in order.
 */
export function passingDays(rule: RRule): PassingDays {
  let known: { from: number; next: number | null } | null = null;
  return {
    next(day) {
      if (known !== null && day >= known.from && (known.next === null || day <= known.next)) return known.next;
      known = { from: day, next: firstPassingDay(rule, day) };
      return known.next;
    },
  };
}

function firstPassingDay(rule: RRule, day: number): number | null {
  const year = new Date(day).getUTCFullYear();
  // The probe's walk from `day` covers a whole cycle before rrule's last year.
  const years = Math.max(0, Math.floor((LAST_RRULE_YEAR - CYCLE_YEARS - 1 - year) / CYCLE_YEARS)) * CYCLE_YEARS;
  const later = laterBy(years);
  const passed = dayProbe(rule, later(utcDay(year, 1, 1))).after(new Date(later(day)), true);
  return passed === null ? null : laterBy(-years)(passed.getTime());
}

const laterBy =
  (years: number) =>
  (time: number): number => {
    const moved = new Date(time);
    moved.setUTCFullYear(moved.getUTCFullYear() + years);
    return moved.getTime();
  };

/**
 * A rule of the same day filters that fires at midnight of each day they pass. BYDAY's ordinals (1MO)
 * count within a month or a year: kept for such rules; the others have plain weekdays. Every filter is
 * given, so that rrule takes none from the probe's own DTSTART.
 */
function dayProbe(rule: RRule, dtstart: number): RRule {
  const given = rule.origOptions;
  const { freq, bymonth, bymonthday } = rule.options;
  const yearly = freq === RRule.YEARLY || freq === RRule.MONTHLY;
  return new RRule({
    freq: yearly ? freq : RRule.YEARLY,
    dtstart: new Date(dtstart),
    wkst: given.wkst ?? null,
    bymonth: given.bymonth ?? bymonth,
    bymonthday: given.bymonthday ?? (bymonthday.length > 0 ? bymonthday : null),
    byyearday: given.byyearday ?? null,
    byweekno: given.byweekno ?? null,
    byweekday: yearly ? (given.byweekday ?? null) : (rule.options.byweekday ?? EVERY_WEEKDAY),
    byhour: 0,
    byminute: 0,
    bysecond: 0,
  });
}

/** The most occurrences a period of a weekly or shorter rule has; undefined for months and years. */
function occurrencesAPeriod(rule: RRule): number | undefined {
  const { freq, byweekday, byhour, byminute, bysecond } = rule.options;
  const seconds = listOf(bysecond).length || 1;
  const minutes = (listOf(byminute).length || 1) * seconds;
  const times = (listOf(byhour).length || 1) * minutes;
  if (freq === RRule.WEEKLY) return (listOf(byweekday).length || 7) * times;
  if (freq === RRule.DAILY) return times;
  if (freq === RRule.HOURLY) return minutes;
  if (freq === RRule.MINUTELY) return seconds;
  return undefined;
}

function listOf(value: unknown): number[] {
  if (value === null || value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).filter((v): v is number => typeof v === 'number');
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}
