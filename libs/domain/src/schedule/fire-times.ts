import { parseCron, type CronSpec } from './cron';
import { nextFireTimes } from './next-fire-times';
import { nextRruleFireTimes, parseRrule } from './rrule-schedule';
import { InvalidScheduleError, type ScheduleSpec } from './schedule-spec';

/**
 * The next fire times of a schedule, cron or RRULE: the one entry point of previews, the materialiser
 * and backfills.
 */
export function scheduleFireTimes(spec: ScheduleSpec, after: Date, count: number): Date[] {
  if (spec.cron !== undefined) return nextFireTimes(parsedCron(spec.cron), spec.timeZone, after, count, spec.dstPolicy);
  return nextRruleFireTimes(parseRrule(spec.rrule ?? ''), spec.timeZone, after, count, spec.dstPolicy);
}

/**
 * What a schedule must also satisfy to be accepted, seen from `now`: it
 * fires at all, at most once a minute, and its jitter fits in its period.
 */
export function assertUsableSchedule(spec: ScheduleSpec, now: Date): void {
  const field = spec.cron !== undefined ? 'cron' : 'rrule';
  const upcoming = scheduleFireTimes(spec, now, 10);
  if (upcoming.length === 0) throw new InvalidScheduleError(field, 'never fires after now');
  const gaps = upcoming.slice(1).map((t, i) => t.getTime() - upcoming[i]!.getTime());
  if (gaps.some((gap) => gap < 60_000)) throw new InvalidScheduleError(field, 'fires more often than once a minute');
  const period = gaps.length === 0 ? Infinity : Math.min(...gaps);
  if (spec.jitterSeconds * 1000 > period)
    throw new InvalidScheduleError(
      'jitterSeconds',
      `${spec.jitterSeconds} s is longer than the schedule's period of ${period / 1000} s`,
    );
}

/** A fleet shares a handful of cron expressions: each is parsed once (bounded: a full cache starts over). */
const parsedCrons = new Map<string, CronSpec>();
const PARSED_CRONS_KEPT = 10_000;

function parsedCron(expression: string): CronSpec {
  let spec = parsedCrons.get(expression);
  if (spec === undefined) {
    spec = parseCron(expression);
    if (parsedCrons.size >= PARSED_CRONS_KEPT) parsedCrons.clear();
    parsedCrons.set(expression, spec);
  }
  return spec;
}
