import {
  acceptSchedule,
  DefineJob,
  MAX_PREVIOUS_VALID_SECONDS,
  parseSchedule,
  previewFireTimes,
  RotateSigningSecret,
  SetJobPaused,
} from '@chronicle/commands';
import {
  assertNoSecrets,
  assertPayloadSize,
  DomainError,
  jobDefinition,
  parseName,
  requireQueue,
  requireReader,
  requireTeam,
  type Caller,
  type DefinedJob,
} from '@chronicle/domain';
import type { JobBody } from './job-dto';

/*
 * A caller's request about jobs as the command or answer it comes to, written once for REST
 * (JobsController) and GraphQL (JobResolver): the same checks, so the same events with the same actor.
 */

/** PUT /v1/jobs/{name} and defineJob: a team's definition on a queue it was granted. */
export function defineJobCommand(caller: Caller, rawName: string, body: JobBody, now: Date): DefineJob {
  const team = requireTeam(caller);
  const name = parseName(rawName, 'job name');
  if (body.queue != null) requireQueue(team, body.queue);
  assertPayloadSize(body.payload);
  assertNoSecrets(body.payload, body.secretsAllowed ?? []);
  // A schedule given, null too, is the domain's to accept (its refusal: invalid-schedule).
  const { schedule, ...fields } = body;
  const accepted = schedule === undefined ? undefined : { ...schedule, ...acceptSchedule(schedule, now) };
  return new DefineJob(team, jobDefinition(name, team.team, { ...withoutNulls(fields), schedule: accepted }));
}

/** The fields given a value: null in an optional field means not given (the default), as undefined does. */
function withoutNulls<T extends object>(fields: T): { [K in keyof T]?: Exclude<T[K], null> } {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== null)) as {
    [K in keyof T]?: Exclude<T[K], null>;
  };
}

/** :pause and :resume, pauseJob and resumeJob. */
export function setJobPausedCommand(caller: Caller, rawName: string, paused: boolean): SetJobPaused {
  return new SetJobPaused(requireTeam(caller), parseName(rawName, 'job name'), paused);
}

/** A rotated secret stays valid a day unless asked otherwise: time for a receiver to take the new one. */
export const PREVIOUS_VALID_SECONDS = { default: 86_400, max: MAX_PREVIOUS_VALID_SECONDS } as const;

/** POST /v1/jobs/{name}/signing-secret:rotate and rotateSigningSecret. */
export function rotateSigningSecretCommand(
  caller: Caller,
  rawName: string,
  previousValidSeconds: number | null | undefined,
): RotateSigningSecret {
  const seconds = previousValidSeconds ?? PREVIOUS_VALID_SECONDS.default;
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > PREVIOUS_VALID_SECONDS.max)
    throw new DomainError(
      'validation-error',
      `previousValidSeconds must be a whole number from 0 to ${PREVIOUS_VALID_SECONDS.max}`,
      { field: 'previousValidSeconds' },
    );
  return new RotateSigningSecret(requireTeam(caller), parseName(rawName, 'job name'), seconds);
}

export const FIRE_TIMES_COUNT = { default: 10, max: 100 } as const;

/** How many fire times a preview asks for (`count`): 10 unless given, at most 100. */
export function fireTimesCount(asked: number | null | undefined): number {
  if (asked == null) return FIRE_TIMES_COUNT.default;
  if (!Number.isInteger(asked) || asked < 1 || asked > FIRE_TIMES_COUNT.max)
    throw new DomainError('validation-error', `count must be a whole number from 1 to ${FIRE_TIMES_COUNT.max}`, {
      field: 'count',
    });
  return asked;
}

/** GET /v1/jobs/{name}/preview and Job.nextFireTimes: the job's next fire times, with its jitter. */
export function jobFireTimes(job: DefinedJob, count: number | null | undefined, now: Date): string[] {
  const asked = fireTimesCount(count);
  if (job.definition.schedule === null) return [];
  return previewFireTimes(parseSchedule(job.definition.schedule), now, asked, job.definition.name);
}

/** POST /v1/schedules:preview and schedulePreview: a schedule's nominal fire times after `after` (now). */
export function scheduleFireTimes(
  caller: Caller,
  schedule: unknown,
  after: Date | undefined,
  count: number | null | undefined,
  now: Date,
): string[] {
  requireReader(caller);
  const from = after ?? now;
  return previewFireTimes(acceptSchedule(schedule, from), from, fireTimesCount(count));
}
