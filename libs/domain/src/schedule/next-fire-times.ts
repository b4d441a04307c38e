import { daysInMonth, LAST_DATE_YEAR, utcDay } from './calendar';
import { matchesDay, matchesSomeDay, type CronSpec } from './cron';
import { localDate, offsetMinutes, DEFAULT_DST_POLICY, resolveWallTime, type DstPolicy } from './zoned-time';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const EVERY_DAY_OF_MONTH = Array.from({ length: 31 }, (_, i) => i + 1);

/**
 * The next `count` fire times of a cron schedule strictly after `after`, in
 * the zone's wall-clock time, as UTC instants, strictly increasing. Pure:
 * the same inputs give the same answer; the materialiser and the preview
 * endpoints use this one function. However far ahead they are: a cron whose
 * day fields match some date matches one every 8 years at least (29 February,
 * 2096 to 2104), and one that matches none is known from its fields.
 */
export function nextFireTimes(
  spec: CronSpec,
  zone: string,
  after: Date,
  count: number,
  policy: DstPolicy = DEFAULT_DST_POLICY,
): Date[] {
  if (count <= 0 || !matchesSomeDay(spec)) return [];
  const fires = new Set<number>();
  const hours = [...spec.hours].sort((a, b) => a - b);
  const minutes = [...spec.minutes].sort((a, b) => a - b);
  // Start a day early: a wall time of the previous local day can still lie ahead in UTC.
  const start = localDate(after.getTime(), zone);
  const first = utcDay(start.year, start.month, start.day) - DAY;
  const sortedFires = (): number[] => [...fires].sort((a, b) => a - b);
  forEachMatchingDay(spec, first, (day, year, month, dayOfMonth) => {
    // A wall time of this day or later is less than a day ahead of it in UTC (offsets are -12 to +14 hours):
    // once `count` fire times lie before the day before, no later day has an earlier one.
    if (fires.size >= count && sortedFires()[count - 1]! < day - DAY) return false;
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
    return true;
  });
  return sortedFires()
    .slice(0, count)
    .map((t) => new Date(t));
}

/**
 * Visits the dates from `first` (a midnight as if in UTC) on that the day fields match, in order, until the
 * visit returns false: only the months of the spec, and in them only its days of the month when the day of
 * the week is `*` (29 February is one date a year to look at), each day when the weekday counts.
 */
function forEachMatchingDay(
  spec: CronSpec,
  first: number,
  visit: (day: number, year: number, month: number, dayOfMonth: number) => boolean,
): void {
  const { months, daysOfMonth } = sortedDayFields(spec);
  const byDayOfMonth = !spec.dayOfWeekRestricted;
  const from = new Date(first);
  const [firstYear, firstMonth] = [from.getUTCFullYear(), from.getUTCMonth() + 1];
  for (let year = firstYear; year <= LAST_DATE_YEAR; year++) {
    for (const month of months) {
      if (year === firstYear && month < firstMonth) continue;
      const monthStart = utcDay(year, month, 1);
      const length = daysInMonth(year, month);
      const firstWeekday = new Date(monthStart).getUTCDay();
      for (const dayOfMonth of daysOfMonth) {
        if (dayOfMonth > length) break;
        const day = monthStart + (dayOfMonth - 1) * DAY;
        if (day < first) continue;
        if (!byDayOfMonth && !matchesDay(spec, dayOfMonth, month, (firstWeekday + dayOfMonth - 1) % 7)) continue;
        if (!visit(day, year, month, dayOfMonth)) return;
      }
    }
  }
}

/** The months and the days of the month to look at, in order: worked out once per spec (specs are cached). */
const sortedFields = new WeakMap<CronSpec, { months: number[]; daysOfMonth: number[] }>();

function sortedDayFields(spec: CronSpec): { months: number[]; daysOfMonth: number[] } {
  let fields = sortedFields.get(spec);
  if (fields === undefined) {
    const sorted = (values: ReadonlySet<number>): number[] => [...values].sort((a, b) => a - b);
    fields = {
      months: sorted(spec.months),
      daysOfMonth: spec.dayOfWeekRestricted ? EVERY_DAY_OF_MONTH : sorted(spec.daysOfMonth),
    };
    sortedFields.set(spec, fields);
  }
  return fields;
}
