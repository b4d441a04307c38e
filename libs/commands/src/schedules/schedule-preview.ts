import {
  assertUsableSchedule,
  scheduleFireTimes,
  jitterOffsetSeconds,
  parseScheduleSpec,
  type ScheduleSpec,
} from '@chronicle/domain';

/** Node's own IANA data: a zone is valid when Intl can format in it and knows it by that name. */
export function isIanaTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return zone === 'UTC' || zone.includes('/');
  } catch {
    return false;
  }
}

export function parseSchedule(input: unknown): ScheduleSpec {
  return parseScheduleSpec(input, isIanaTimeZone);
}

/** A schedule a user gives (job definition, preview): well-formed, and it fires, at most once a minute. */
export function acceptSchedule(input: unknown, now: Date): ScheduleSpec {
  const spec = parseSchedule(input);
  assertUsableSchedule(spec, now);
  return spec;
}

/**
 * Fire times of a schedule after `after`, as UTC instants: nominal for
 * POST /v1/schedules:preview, with the job's jitter for a job's preview.
 * The same computation the materialiser will use.
 */
export function previewFireTimes(spec: ScheduleSpec, after: Date, count: number, jitterFor?: string): string[] {
  const jitter = jitterFor === undefined ? 0 : jitterOffsetSeconds(jitterFor, spec.jitterSeconds);
  return scheduleFireTimes(spec, after, count).map((t) =>
    new Date(t.getTime() + jitter * 1000).toISOString().replace('.000Z', 'Z'),
  );
}
