import { matchesDay, type CronSpec } from './cron';
import { localDate, offsetMinutes, REFERENCE_DST_POLICY, resolveWallTime, type DstPolicy } from './zoned-time';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/**
 * How far ahead to look for a next fire time before giving up (a cron like 0 0 30 2 * never fires); an
 * RRULE none of whose days come within it is not walked either (rrule-schedule.ts).
 */
export const MAX_DAYS_AHEAD = 366 * 5;

/**
 * The next `count` fire times of a cron schedule strictly after `after`, in
 * the zone's wall-clock time, as UTC instants, strictly increasing. Pure:
 * the same inputs give the same answer; the materialiser and the preview
 * endpoints use this one function.
 */
export function nextFireTimes(
  spec: CronSpec,
  zone: string,
  after: Date,
  count: number,
  policy: DstPolicy = REFERENCE_DST_POLICY,
): Date[] {
  const fires = new Set<number>();
  const hours = [...spec.hours].sort((a, b) => a - b);
  const minutes = [...spec.minutes].sort((a, b) => a - b);
  // Start a day early: a wall time of the previous local day can still lie ahead in UTC.
  const start = localDate(after.getTime(), zone);
  let day = Date.UTC(start.year, start.month - 1, start.day) - DAY;
  for (let i = 0; i <= MAX_DAYS_AHEAD; i++, day += DAY) {
    const date = new Date(day);
    const [year, month, dayOfMonth] = [date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate()];
    if (matchesDay(spec, dayOfMonth, month, date.getUTCDay())) {
      // Most days have one offset throughout: wall time minus offset, no search.
      // Only a day with a transition resolves each wall time on its own.
      const offset = offsetMinutes(day - 14 * HOUR, zone);
      const steady = offset === offsetMinutes(day + 38 * HOUR, zone);
      for (const hour of hours) {
        for (const minute of minutes) {
          const instants = steady
            ? [day + (hour * 60 + minute - offset) * 60_000]
            : resolveWallTime({ year, month, day: dayOfMonth, hour, minute }, zone, policy);
          for (const instant of instants) if (instant > after.getTime()) fires.add(instant);
        }
      }
    }
    // A day later, nothing earlier can still come: offsets differ by hours, not days.
    if (fires.size >= count && i > 1) {
      const sorted = [...fires].sort((a, b) => a - b);
      if (sorted[count - 1]! < day) return sorted.slice(0, count).map((t) => new Date(t));
    }
  }
  return [...fires]
    .sort((a, b) => a - b)
    .slice(0, count)
    .map((t) => new Date(t));
}
