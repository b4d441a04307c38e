import { RRule, type RRuleSet } from 'rrule';
import { LAST_RRULE_YEAR } from './calendar';
import { passingDays, type PassingDays } from './rrule-limits';

/*
 * A recurrence's occurrences, walked in bounded steps however far apart they are. rrule walks a rule
 * period by period, stopping only at an occurrence or at the year 9999: a daily rule of a Monday 29
 * February steps through 10,000 days to each one (28 years), and one of days that never come through
 * 2.9 million to 9999 (11 s). Here each rule's walk jumps over the days its filters pass none of.
 */

const DAY = 86_400_000;
/** rrule walks no further than its last year: the fire times of an RRULE end before it, as rrule's do. */
const WALK_END = Date.UTC(LAST_RRULE_YEAR, 0, 1);
/** Occurrences taken of a walk at once, growing: a query wants a few, a backfill a thousand. */
const FIRST_BATCH = 16;
const LAST_BATCH = 1024;
/** A walk steps to the next passing day through at most this many periods, else it starts again there. */
const STEPS_BEFORE_A_JUMP = 16;
const EVERY_WEEKDAY = [0, 1, 2, 3, 4, 5, 6];

/** The fixed length of a period in floating (wall-clock) time, where no day has 23 or 25 hours. */
const FIXED_PERIOD_MS: Partial<Record<number, number>> = {
  [RRule.WEEKLY]: 7 * DAY,
  [RRule.DAILY]: DAY,
  [RRule.HOURLY]: 3_600_000,
  [RRule.MINUTELY]: 60_000,
};

/** The set's occurrences after `from` (floating time), in order: its rules' and RDATEs, without its EXDATEs. */
export function* occurrencesAfter(set: RRuleSet, from: Date): Generator<Date> {
  const excluded = new Set(set.exdates().map((date) => date.getTime()));
  const rdates = set
    .rdates()
    .filter((date) => date > from)
    .sort((a, b) => a.getTime() - b.getTime());
  const streams = [...set.rrules().map((rule) => ruleOccurrences(rule, from)), rdates[Symbol.iterator]()];
  const heads = streams.map((stream) => stream.next());
  for (let last = NaN; ;) {
    let earliest = -1;
    heads.forEach((head, i) => {
      if (!head.done && (earliest < 0 || head.value < heads[earliest]!.value!)) earliest = i;
    });
    if (earliest < 0) return;
    const next = heads[earliest]!.value as Date;
    heads[earliest] = streams[earliest]!.next();
    if (next.getTime() === last || excluded.has(next.getTime())) continue;
    last = next.getTime();
    yield next;
  }
}

/**
 * One rule's occurrences after `from`. A rule none of whose days ever pass is not walked. A rule of a
 * fixed period walks from a DTSTART moved forward by whole periods (which keeps its occurrences, and the
 * defaults taken from DTSTART, exactly), and jumps to the days its filters pass when they are far apart,
 * unless BYSETPOS picks among days of a week that other filters thin out. A yearly or monthly rule walks
 * from its DTSTART: at most 8,000 years or 96,000 months to 9999.
 */
function ruleOccurrences(rule: RRule, from: Date): Iterator<Date> {
  const days = passingDays(rule);
  if (days.next(dayOf(from.getTime())) === null) return [][Symbol.iterator]();
  const period = (FIXED_PERIOD_MS[rule.options.freq] ?? 0) * rule.options.interval;
  const { freq, bysetpos, bymonth, bymonthday, bynmonthday, byyearday, byweekno } = rule.options;
  const thinnedWeeks =
    freq === RRule.WEEKLY &&
    notEmpty(bysetpos) &&
    [bymonth, bymonthday, bynmonthday, byyearday, byweekno].some(notEmpty);
  if (period === 0 || thinnedWeeks) return walkedOccurrences(rule, from, period);
  return jumpingOccurrences(rule, from, period, days);
}

/** rrule's own walk, in batches; with a fixed period and no COUNT, from a DTSTART just before `from`. */
function* walkedOccurrences(rule: RRule, from: Date, period: number): Generator<Date> {
  const walked = period === 0 || rule.options.count !== null ? rule : movedTo(rule.origOptions, rule, from, period);
  for (let after = from, size = FIRST_BATCH; ; size = Math.min(size * 4, LAST_BATCH)) {
    const batch = walked.between(after, new Date(WALK_END), false, (_, taken) => taken < size);
    yield* batch;
    if (batch.length < size) return;
    after = batch[batch.length - 1]!;
  }
}

/**
 * A fixed-period rule walked without its day filters, so that every period has occurrences and each walk
 * ends where it is asked to; the filters are applied here, the next passing day found by a probe that walks
 * years (rrule-limits.ts). COUNT counts from DTSTART: a counted rule is walked from there, counted here.
 */
function* jumpingOccurrences(rule: RRule, from: Date, period: number, days: PassingDays): Generator<Date> {
  const { count, until, byweekday } = rule.options;
  const unfiltered = {
    ...rule.origOptions,
    count: null,
    bymonth: null,
    bymonthday: null,
    byyearday: null,
    byweekno: null,
    // A week's days are its BYDAY (or DTSTART's weekday, or all of them with BYWEEKNO and the like), kept: the
    // probe passes only those too. Without any, rrule would take DTSTART's.
    byweekday: rule.options.freq === RRule.WEEKLY ? (byweekday ?? EVERY_WEEKDAY) : null,
  };
  const end = Math.min(WALK_END, until === null ? Infinity : until.getTime() + 1);
  let after = count === null ? from.getTime() : rule.options.dtstart.getTime() - 1;
  let counted = 0;
  for (let size = FIRST_BATCH; after < end; size = Math.min(size * 4, LAST_BATCH)) {
    const day = days.next(dayOf(after));
    if (day === null) return;
    const start = Math.max(after, day - 1);
    const walked = movedTo(unfiltered, rule, new Date(start), period);
    const batch: Date[] = [];
    let resume = end;
    let spent = false;
    walked.between(new Date(start), new Date(end), false, (occurrence) => {
      const time = occurrence.getTime();
      const next = days.next(dayOf(time));
      if (next === dayOf(time)) {
        if (count !== null && ++counted > count) {
          spent = true;
          return false;
        }
        if (time > from.getTime()) batch.push(occurrence);
        if (batch.length < size) return true;
        resume = time;
        return false;
      }
      if (next !== null && next - time <= STEPS_BEFORE_A_JUMP * period) return true;
      // Far from the next passing day: start again there (none: the walk is over).
      resume = next === null ? end : next - 1;
      return false;
    });
    yield* batch;
    if (spent || resume >= end) return;
    after = resume;
  }
}

/** The rule of `options` from a DTSTART moved forward by whole periods to a period before `from`. */
function movedTo(options: RRule['origOptions'], rule: RRule, from: Date, period: number): RRule {
  const dtstart = rule.options.dtstart.getTime();
  const periods = Math.max(0, Math.floor((from.getTime() - dtstart) / period) - 1);
  return new RRule({ ...options, dtstart: new Date(dtstart + periods * period) });
}

function dayOf(time: number): number {
  return Math.floor(time / DAY) * DAY;
}

function notEmpty(values: unknown): boolean {
  return Array.isArray(values) ? values.length > 0 : values !== null && values !== undefined;
}
