import { scheduledRunId, scheduledRunIdBefore } from '../runs/new-run';
import { InvalidScheduleError, jitterOffsetSeconds, formatWithOffset, scheduleFireTimes } from '@chronicle/domain';
import type { EnqueueRequest } from '../runs/enqueue-runs.command';
import { parseSchedule } from './schedule-preview';

/** At most this many runs per backfill call; a longer range is split by the caller. */
export const BACKFILL_CAP = 1000;

/**
 * The runs of every fire time of a job's schedule in [from, to] (a past
 * range), with the ids the materialiser gives them: a fire time backfilled
 * twice, or materialised already, is not run twice.
 */
export function backfillRequests(
  jobName: string,
  schedule: unknown,
  from: Date,
  to: Date,
  now: Date,
): EnqueueRequest[] {
  if (!(from < to)) throw new InvalidScheduleError('backfill', 'from must be before to');
  if (to > now) throw new InvalidScheduleError('backfill', 'a backfill covers the past: to must not be in the future');
  const spec = parseSchedule(schedule);
  const fireTimes = scheduleFireTimes(spec, new Date(from.getTime() - 1), BACKFILL_CAP + 1).filter((t) => t <= to);
  if (fireTimes.length > BACKFILL_CAP)
    throw new InvalidScheduleError(
      'backfill',
      `the range holds more than ${BACKFILL_CAP} fire times; backfill it in parts`,
    );
  const jitter = jitterOffsetSeconds(jobName, spec.jitterSeconds) * 1000;
  return fireTimes.map((nominal) => ({
    dueAt: new Date(nominal.getTime() + jitter),
    idempotencyKey: `${jobName}@${formatWithOffset(nominal, spec.timeZone)}`,
    scheduled: {
      runId: scheduledRunId(jobName, nominal),
      runIdBefore: scheduledRunIdBefore(jobName, nominal),
      source: 'backfill' as const,
    },
  }));
}
