import {
  DEFAULT_OVERLAP_POLICY,
  OVERLAP_POLICIES,
  DEFAULT_DST_POLICY,
  type DstPolicy,
  type ScheduleSpec,
} from '@chronicle/domain';
import { integer, nullable, oneOf, shape, text } from '../http/body-schema';

/*
 * A job's schedule in the OpenAPI document: as a client gives it (every field but cron or rrule has a
 * default) and as the API shows it (defaults filled in). parseScheduleSpec checks it; these only say it.
 */

const GAPS = ['shift', 'skip'] as const satisfies ReadonlyArray<DstPolicy['gap']>;
const OVERLAPS = ['first', 'last', 'both'] as const satisfies ReadonlyArray<DstPolicy['overlap']>;
const MISSED_RUN_POLICIES = ['run_once', 'run_all', 'skip'] as const satisfies ReadonlyArray<
  ScheduleSpec['missedRunPolicy']
>;

const DST_POLICY = shape({ required: { gap: oneOf(GAPS), overlap: oneOf(OVERLAPS) } });

const TIMING = {
  cron: {
    ...text(),
    description: "five fields, in the zone's wall-clock time; give cron or rrule",
    example: '0 2 * * *',
  },
  rrule: {
    ...text(),
    description: 'an RFC 5545 RRULE (with DTSTART, UNTIL, COUNT, EXDATE lines if wanted); give cron or rrule',
    example: 'FREQ=MONTHLY;BYDAY=MO;BYSETPOS=1;BYHOUR=9;BYMINUTE=0',
  },
};

const POLICIES = {
  timeZone: { ...text(), description: 'an IANA time zone', example: 'Europe/Berlin' },
  jitterSeconds: { ...integer(0, 3600), description: 'every run of the job is offset by the same part of this' },
  missedRunPolicy: {
    ...oneOf(MISSED_RUN_POLICIES),
    description: 'runs missed while the scheduler was down or the job paused',
  },
  dstPolicy: { ...DST_POLICY, description: 'wall times that fall in a DST gap or overlap' },
  overlapPolicy: {
    ...oneOf(OVERLAP_POLICIES),
    description: 'what a fire does while an earlier run of the job is leased',
  },
};

/** A schedule as a client gives it: exactly one of cron or rrule; unknown fields are refused (400 invalid-schedule). */
export const ScheduleBody = {
  ...shape(
    {
      required: {},
      optional: {
        ...TIMING,
        timeZone: { ...POLICIES.timeZone, default: 'UTC' },
        jitterSeconds: { ...POLICIES.jitterSeconds, default: 60 },
        missedRunPolicy: { ...POLICIES.missedRunPolicy, default: 'run_once' },
        dstPolicy: { ...POLICIES.dstPolicy, default: DEFAULT_DST_POLICY },
        overlapPolicy: { ...POLICIES.overlapPolicy, default: DEFAULT_OVERLAP_POLICY },
      },
    },
    'ScheduleBody',
  ),
  additionalProperties: false,
};

/** A job's schedule as the API shows it, its defaults filled in; null for a job without one. */
export const JobSchedule = nullable(shape({ required: POLICIES, optional: TIMING }));
