import { type RRuleSet, rrulestr } from 'rrule';
import { refuseEndlessWalk, RruleSyntaxError } from './rrule-limits';
import { occurrencesAfter } from './rrule-walk';
import { resolveWallTime, offsetMinutes, DEFAULT_DST_POLICY, type DstPolicy } from './zoned-time';

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
  policy: DstPolicy = DEFAULT_DST_POLICY,
): Date[] {
  const fires = new Set<number>();
  // Start a day of wall clock early: a wall time before `after`'s own can still lie ahead in UTC.
  const from = new Date(after.getTime() + offsetMinutes(after.getTime(), zone) * 60_000 - 86_400_000);
  for (const next of occurrencesAfter(set, from)) {
    const wall = {
      year: next.getUTCFullYear(),
      month: next.getUTCMonth() + 1,
      day: next.getUTCDate(),
      hour: next.getUTCHours(),
      minute: next.getUTCMinutes(),
    };
    for (const instant of resolveWallTime(wall, zone, policy)) if (instant > after.getTime()) fires.add(instant);
    if (fires.size >= count + 2) break;
  }
  return [...fires]
    .sort((a, b) => a - b)
    .slice(0, count)
    .map((t) => new Date(t));
}
