import { DomainError } from '../domain-error';
import { CronSyntaxError, parseCron } from './cron';
import { parseRrule } from './rrule-schedule';
import { RruleSyntaxError } from './rrule-limits';
import { DEFAULT_DST_POLICY, type DstPolicy } from './zoned-time';

/**
 * The `schedule` of a job definition (docs/api.md, "Schedules"), checked on
 * the way in: one of cron or rrule (both parsed), an IANA time zone, jitter
 * and the missed-run policy. A wrong field is a 400 invalid-schedule naming it.
 */
export interface ScheduleSpec {
  readonly cron?: string;
  readonly rrule?: string;
  readonly timeZone: string;
  readonly jitterSeconds: number;
  readonly missedRunPolicy: 'run_once' | 'run_all' | 'skip';
  readonly dstPolicy: DstPolicy;
  /** What a fire does while an earlier run of the job is still leased (Temporal's names); buffer_one by default. */
  readonly overlapPolicy: OverlapPolicy;
}

export const OVERLAP_POLICIES = ['skip', 'buffer_one', 'buffer_all', 'cancel_other', 'allow_all'] as const;
/** A scheduled job's policy when its schedule names none (SQL: job_overlap_policy, migrations/0010). */
export const DEFAULT_OVERLAP_POLICY = 'buffer_one' satisfies (typeof OVERLAP_POLICIES)[number];
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

export class InvalidScheduleError extends DomainError {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super('invalid-schedule', `schedule.${field}: ${message}`, { field: `schedule.${field}` });
    this.name = 'InvalidScheduleError';
  }
}

const KNOWN_FIELDS = new Set([
  'cron',
  'rrule',
  'timeZone',
  'jitterSeconds',
  'missedRunPolicy',
  'dstPolicy',
  'overlapPolicy',
]);

/** `isTimeZone` is the host's IANA lookup (Intl), passed in so the domain stays free of the runtime. */
export function parseScheduleSpec(input: unknown, isTimeZone: (zone: string) => boolean): ScheduleSpec {
  if (input === null || typeof input !== 'object' || Array.isArray(input))
    throw new InvalidScheduleError('(root)', 'must be an object');
  const spec = input as Record<string, unknown>;
  for (const key of Object.keys(spec))
    if (!KNOWN_FIELDS.has(key)) throw new InvalidScheduleError(key, 'is not a schedule field');
  const { cron, rrule } = spec;
  if ((cron === undefined) === (rrule === undefined))
    throw new InvalidScheduleError('cron', 'give exactly one of cron or rrule');
  if (cron !== undefined) {
    if (typeof cron !== 'string') throw new InvalidScheduleError('cron', 'must be a string');
    try {
      parseCron(cron);
    } catch (err) {
      if (err instanceof CronSyntaxError) throw new InvalidScheduleError('cron', `${err.field}: ${err.message}`);
      throw err;
    }
  }
  if (rrule !== undefined) {
    if (typeof rrule !== 'string' || !/FREQ=/i.test(rrule))
      throw new InvalidScheduleError('rrule', 'must be an RFC 5545 RRULE with a FREQ');
    try {
      parseRrule(rrule);
    } catch (err) {
      if (err instanceof RruleSyntaxError) throw new InvalidScheduleError('rrule', err.message);
      throw err;
    }
  }
  const timeZone = spec['timeZone'] ?? 'UTC';
  if (typeof timeZone !== 'string' || !isTimeZone(timeZone))
    throw new InvalidScheduleError('timeZone', `${JSON.stringify(timeZone)} is not an IANA time zone`);
  const jitterSeconds = spec['jitterSeconds'] ?? 60;
  if (
    typeof jitterSeconds !== 'number' ||
    !Number.isInteger(jitterSeconds) ||
    jitterSeconds < 0 ||
    jitterSeconds > 3600
  ) {
    throw new InvalidScheduleError('jitterSeconds', 'must be a whole number of seconds from 0 to 3600');
  }
  const missedRunPolicy = spec['missedRunPolicy'] ?? 'run_once';
  if (missedRunPolicy !== 'run_once' && missedRunPolicy !== 'run_all' && missedRunPolicy !== 'skip') {
    throw new InvalidScheduleError('missedRunPolicy', 'must be run_once, run_all or skip');
  }
  const overlapPolicy = spec['overlapPolicy'] ?? DEFAULT_OVERLAP_POLICY;
  if (!OVERLAP_POLICIES.includes(overlapPolicy as OverlapPolicy))
    throw new InvalidScheduleError('overlapPolicy', `must be one of ${OVERLAP_POLICIES.join(', ')}`);
  return {
    ...(cron !== undefined ? { cron: cron as string } : { rrule: rrule as string }),
    timeZone,
    jitterSeconds,
    missedRunPolicy,
    dstPolicy: parseDstPolicy(spec['dstPolicy']),
    overlapPolicy: overlapPolicy as OverlapPolicy,
  };
}

/** Optional per schedule; DEFAULT_DST_POLICY (gap: shift, overlap: first) by default. */
function parseDstPolicy(input: unknown): DstPolicy {
  if (input === undefined) return DEFAULT_DST_POLICY;
  if (input === null || typeof input !== 'object' || Array.isArray(input))
    throw new InvalidScheduleError('dstPolicy', 'must be an object {gap, overlap}');
  const {
    gap = DEFAULT_DST_POLICY.gap,
    overlap = DEFAULT_DST_POLICY.overlap,
    ...rest
  } = input as Record<string, unknown>;
  if (Object.keys(rest).length > 0)
    throw new InvalidScheduleError(`dstPolicy.${Object.keys(rest)[0]}`, 'is not a dstPolicy field');
  if (gap !== 'shift' && gap !== 'skip') throw new InvalidScheduleError('dstPolicy.gap', 'must be shift or skip');
  if (overlap !== 'first' && overlap !== 'last' && overlap !== 'both')
    throw new InvalidScheduleError('dstPolicy.overlap', 'must be first, last or both');
  return { gap, overlap };
}
