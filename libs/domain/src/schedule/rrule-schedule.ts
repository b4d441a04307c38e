import { RRule, RRuleSet, rrulestr } from 'rrule';
import { MAX_DAYS_AHEAD } from './next-fire-times';
import { passesSomeDay, refuseEndlessWalk, RruleSyntaxError } from './rrule-limits';
import { resolveWallTime, offsetMinutes, REFERENCE_DST_POLICY, type DstPolicy } from './zoned-time';

/**
 * RFC 5545 recurrences evaluated in the zone's wall-clock time: the rule
 * runs over "floating" times (wall clock written as UTC), then each wall time
 * is resolved in the zone with the same DST rules as cron. DTSTART and
 * EXDATE are wall-clock times (no Z, no TZID); without DTSTART the rule is
 * anchored at 2026-01-01T00:00, so give one when COUNT or an INTERVAL's phase
 * matters.
 */
export const DEFAULT_DTSTART = 'DTSTART:20260101T000000';

export function parseRrule(text: string): RRuleSet {
  const lines = text
    .trim()
    .split(/\r?\n|\\n/)
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => (/^(RRULE|DTSTART|EXDATE|RDATE|EXRULE)[:;]/i.test(line) ? line : `RRULE:${line}`));
  for (const line of lines) {
    if (/^(DTSTART|EXDATE|RDATE)/i.test(line) && (/TZID=/i.test(line) || /\d{8}T\d{6}Z/i.test(line))) {
      throw new RruleSyntaxError(
        `${line.split(/[:;]/)[0]} is a wall-clock time in the schedule's timeZone: write it without Z or TZID`,
      );
    }
  }
  // Schedules fire at most once a minute; rrule would also walk every second since DTSTART.
  if (lines.some((line) => /FREQ=SECONDLY/i.test(line)))
    throw new RruleSyntaxError('FREQ=SECONDLY fires more often than once a minute');
  // An EXRULE that takes out every occurrence would be walked to the year 9999 (RFC 5545 deprecates it).
  if (lines.some((line) => /^EXRULE/i.test(line))) throw new RruleSyntaxError('EXRULE is deprecated: use EXDATE');
  if (!lines.some((line) => /^DTSTART/i.test(line))) lines.unshift(DEFAULT_DTSTART);
  let set: RRuleSet;
  try {
    set = rrulestr(lines.join('\n'), { forceset: true }) as RRuleSet;
  } catch (err) {
    throw new RruleSyntaxError(err instanceof Error ? err.message : String(err));
  }
  for (const rule of set.rrules()) refuseEndlessWalk(rule);
  return set;
}

/** The next `count` fire times strictly after `after`, as UTC instants, strictly increasing. */
export function nextRruleFireTimes(
  set: RRuleSet,
  zone: string,
  after: Date,
  count: number,
  policy: DstPolicy = REFERENCE_DST_POLICY,
): Date[] {
  const fires = new Set<number>();
  // Start a day of wall clock early: a wall time before `after`'s own can still lie ahead in UTC.
  const from = new Date(after.getTime() + offsetMinutes(after.getTime(), zone) * 60_000 - 86_400_000);
  // One walk over the occurrences, stopped once enough are found.
  walkedSet(set, from).between(from, new Date(Date.UTC(9999, 0, 1)), false, (next) => {
    const wall = {
      year: next.getUTCFullYear(),
      month: next.getUTCMonth() + 1,
      day: next.getUTCDate(),
      hour: next.getUTCHours(),
      minute: next.getUTCMinutes(),
    };
    for (const instant of resolveWallTime(wall, zone, policy)) if (instant > after.getTime()) fires.add(instant);
    return fires.size < count + 2;
  });
  return [...fires]
    .sort((a, b) => a - b)
    .slice(0, count)
    .map((t) => new Date(t));
}

/** The fixed period of a frequency in floating (wall-clock) time, where no day has 23 or 25 hours. */
const FIXED_PERIOD_MS: Partial<Record<number, number>> = {
  [RRule.WEEKLY]: 7 * 86_400_000,
  [RRule.DAILY]: 86_400_000,
  [RRule.HOURLY]: 3_600_000,
  [RRule.MINUTELY]: 60_000,
};

/**
 * The recurrence as walked from `from`: without the rules whose day filters pass no day within the
 * five years a cron is looked ahead (rrule would walk them to the year 9999, finding nothing, for
 * seconds), and with each other rule's DTSTART
 * moved forward by whole periods to just before `from`. rrule walks every occurrence from DTSTART on
 * each query: a minutely rule started in January would take a second per query by December. Whole
 * periods of a fixed-length frequency keep the occurrences (and the defaults taken from DTSTART: its
 * weekday, time of day, minute) exactly as they were. A rule with COUNT counts from its real DTSTART
 * and is left alone; monthly and yearly rules walk few steps.
 */
function walkedSet(set: RRuleSet, from: Date): RRuleSet {
  const until = new Date(from.getTime() + MAX_DAYS_AHEAD * 86_400_000);
  const walked = new RRuleSet();
  for (const rule of set.rrules()) {
    if (!passesSomeDay(rule, from, until)) continue;
    const period = (FIXED_PERIOD_MS[rule.options.freq] ?? 0) * rule.options.interval;
    const start = rule.options.dtstart.getTime();
    const periods = period === 0 || rule.options.count !== null ? 0 : Math.floor((from.getTime() - start) / period) - 1;
    walked.rrule(periods > 0 ? new RRule({ ...rule.origOptions, dtstart: new Date(start + periods * period) }) : rule);
  }
  for (const date of set.rdates()) walked.rdate(date);
  for (const date of set.exdates()) walked.exdate(date);
  return walked;
}
