import { scheduleFireTimes } from './fire-times';
import { jitterOffsetSeconds } from './jitter';
import type { ScheduleSpec } from './schedule-spec';
import { offsetMinutes } from './zoned-time';

export interface PlannedRun {
  /** The fire time the schedule names; the run's identity and idempotency key use it. */
  readonly nominalAt: Date;
  /** Nominal time plus the job's jitter: when the run becomes ready. */
  readonly dueAt: Date;
  readonly source: 'schedule' | 'catch_up';
  /** `job_name@due_at` with the zone's offset, stable across attempts (docs/api.md, "Schedules"). */
  readonly idempotencyKey: string;
}

export interface PlanInput {
  readonly jobName: string;
  readonly spec: ScheduleSpec;
  /** Nominal time up to which runs were materialised; null for a schedule never materialised. */
  readonly cursor: Date | null;
  readonly now: Date;
  readonly lookaheadSeconds: number;
  /** run_all creates at most this many catch-up runs (the latest ones). */
  readonly runAllCap: number;
}

export interface ScheduledRunsPlan {
  readonly runs: PlannedRun[];
  /** The nominal time up to which the job is now materialised. */
  readonly cursor: Date;
  /**
   * The first fire time after the cursor, null when the schedule never fires again: when the job is
   * next due for materialising.
   */
  readonly nextFireAt: Date | null;
}

export const RUN_ALL_CAP = 1000;

/**
 * What the materialiser appends on one pass for one job: every fire time in
 * (cursor, now + lookahead]. Fire times already past were missed (scheduler
 * down, job paused): `run_once` keeps the latest as one catch-up run,
 * `run_all` keeps them all (at most runAllCap, the latest), `skip` none.
 * A schedule never materialised starts now: no runs for its past.
 */
export function planScheduledRuns(input: PlanInput): ScheduledRunsPlan {
  const { spec, now } = input;
  const until = new Date(now.getTime() + input.lookaheadSeconds * 1000);
  const fireTimes: Date[] = [];
  let nextFireAt: Date | null = null;
  // Small steps first: an hourly schedule needs one or two fire times a pass, a long outage of a frequent one many.
  for (let after = input.cursor ?? now, step = 4; ; step = Math.min(step * 4, 256)) {
    const batch = scheduleFireTimes(spec, after, step);
    const within = batch.filter((t) => t <= until);
    fireTimes.push(...within);
    // Keep memory bounded on a long outage of a frequent schedule: only the latest missed ones can survive the policy.
    if (fireTimes.length > input.runAllCap + 100) fireTimes.splice(0, fireTimes.length - (input.runAllCap + 100));
    if (within.length < batch.length) {
      nextFireAt = batch[within.length]!;
      break;
    }
    if (batch.length < step) break;
    after = batch[batch.length - 1]!;
  }
  const missed = fireTimes.filter((t) => t <= now);
  const upcoming = fireTimes.filter((t) => t > now);
  const caughtUp =
    spec.missedRunPolicy === 'skip'
      ? []
      : spec.missedRunPolicy === 'run_once'
        ? missed.slice(-1)
        : missed.slice(-input.runAllCap);
  const jitter = jitterOffsetSeconds(input.jobName, spec.jitterSeconds) * 1000;
  const plan = (nominalAt: Date, source: PlannedRun['source']): PlannedRun => ({
    nominalAt,
    dueAt: new Date(nominalAt.getTime() + jitter),
    source,
    idempotencyKey: `${input.jobName}@${formatWithOffset(nominalAt, spec.timeZone)}`,
  });
  return {
    runs: [...caughtUp.map((t) => plan(t, 'catch_up')), ...upcoming.map((t) => plan(t, 'schedule'))],
    cursor: until,
    nextFireAt,
  };
}

/** 2026-03-15T02:00:00+01:00: the instant as the zone's wall clock shows it, with its offset. */
export function formatWithOffset(instant: Date, zone: string): string {
  const offset = offsetMinutes(instant.getTime(), zone);
  const local = new Date(instant.getTime() + offset * 60_000).toISOString().slice(0, 19);
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset);
  return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}
