import { parseCron } from './cron';
import { nextFireTimes } from './next-fire-times';
import { nextRruleFireTimes, parseRrule } from './rrule-schedule';
import type { ScheduleSpec } from './schedule-spec';

/** The next fire times of a schedule, cron or RRULE: the one entry point of previews, the materialiser and backfills. */
export function scheduleFireTimes(spec: ScheduleSpec, after: Date, count: number): Date[] {
  if (spec.cron !== undefined) return nextFireTimes(parseCron(spec.cron), spec.timeZone, after, count, spec.dstPolicy);
  return nextRruleFireTimes(parseRrule(spec.rrule ?? ''), spec.timeZone, after, count, spec.dstPolicy);
}
