import { DomainError } from '../domain-error';
import type { Priority, RetryPolicy } from '../run/run-events';

/**
 * A job definition, the body of PUT /v1/jobs/{name} (docs/api.md, "Job definitions"). `schedule` is kept
 * as given; parseScheduleSpec (schedule/schedule-spec.ts) reads it.
 */
export interface JobDefinition {
  readonly name: string;
  readonly team: string;
  readonly queue: string;
  readonly priority: Priority;
  readonly timeoutSeconds: number;
  readonly retry: RetryPolicy;
  readonly concurrency: number | null;
  readonly payload: unknown;
  readonly schedule: unknown;
  /** Paths of its payloads the secret scanner lets through (its false positives, `$.sftp.hostKey`); absent: none. */
  readonly secretsAllowed?: readonly string[];
  /**
   * Dry run (docs/api.md, "Schedules"): runs are scheduled and leased as usual, marked dry, and their
   * handlers are told to log what they would do and have no effects. Absent: not dry.
   */
  readonly dryRun?: true;
  /**
   * How long a run enqueued with a `uniqueKey` keeps the key from another run of this job (docs/api.md,
   * "Unique runs"). Absent: while-pending, the default for a run that names a key.
   */
  readonly unique?: UniquePolicy;
  /**
   * At most this many runs of one concurrency key (a run's `concurrencyKey`, such as a customer id) leased
   * at once, beside `concurrency` for the job as a whole (docs/api.md, "Dispatch: priorities, fairness,
   * concurrency"). Absent: 1 for a run that names a key.
   */
  readonly perKeyConcurrency?: number;
  /**
   * What a failed run of an ordering key (a run's `orderingKey`) with retries left does to its key
   * (docs/api.md, "Order per key"): hold (the default) keeps the key's later runs waiting until it
   * succeeds or dies; skip lets them go on while it waits for its retry. Absent: hold.
   */
  readonly orderingOnRetry?: OrderingOnRetry;
  /** At most this rate of its runs leased, across every worker (docs/api.md, "Rate limits"). Absent: none. */
  readonly rate?: RateLimit;
  /** At most this rate of its runs with one concurrency key leased, each key a bucket of its own. Absent: none. */
  readonly keyRate?: RateLimit;
  /**
   * Debounced runs (docs/api.md, "Debounced runs"): an enqueue naming a `debounceKey` while a run of the
   * job with that key waits unleased moves that run to `seconds` after the enqueue's due time and gives it
   * the enqueue's payload, instead of making another. Absent: enqueues may not name a debounce key.
   */
  readonly debounce?: DebouncePolicy;
  /**
   * An HTTP target (docs/api.md, "HTTP-target jobs"): the scheduler's dispatchers POST each run to it,
   * signed, instead of a worker leasing it; its runs wait on HTTP_TARGET_QUEUE. Absent: a worker's job.
   */
  readonly target?: HttpTarget;
}

/** Where an HTTP-target job's runs are POSTed, and how long each call may take. */
export interface HttpTarget {
  readonly url: string;
  readonly timeoutSeconds: number;
}

/**
 * The reserved queue of HTTP-target jobs' runs, leased only by the dispatchers: it begins with `_`,
 * which no queue a team names may.
 */
export const HTTP_TARGET_QUEUE = '_http';

/** A target call's timeout, in whole seconds: 30 unless given, at most 15 minutes. */
export const TARGET_TIMEOUT_SECONDS = { default: 30, min: 1, max: 900 } as const;

export const RATE_PERIODS = ['second', 'minute', 'hour', 'day'] as const;
export type RatePeriod = (typeof RATE_PERIODS)[number];

/**
 * A token bucket: `limit` tokens earned each `per`, at most `burst` kept (`limit` when absent); each run
 * leased takes one.
 */
export interface RateLimit {
  readonly limit: number;
  readonly per: RatePeriod;
  readonly burst?: number;
}

export const ORDERING_ON_RETRY = ['hold', 'skip'] as const;
export type OrderingOnRetry = (typeof ORDERING_ON_RETRY)[number];

export interface DebouncePolicy {
  readonly seconds: number;
}

/** A job's debounce, in whole seconds: at least one, at most a day. */
export const DEBOUNCE_SECONDS = { min: 1, max: 86_400 } as const;

/**
 * While a run holds its key, an enqueue naming the same key answers with that run instead of making
 * another: while the run waits (scheduled or retry_wait), while it is not finished (leased too), or for
 * a time from its enqueue, whatever its state.
 */
export type UniquePolicy =
  { readonly scope: 'while-pending' | 'while-not-finished' } | { readonly scope: 'for'; readonly seconds: number };

export const UNIQUE_SCOPES = ['while-pending', 'while-not-finished', 'for'] as const;

/** The schema version job events are written with (a breaking change adds one and an upcaster). */
export const JOB_EVENT_SCHEMA_VERSION = 1;

export type JobEvent =
  | { readonly type: 'JobDefined'; readonly data: { readonly definition: JobDefinition; readonly version: number } }
  | { readonly type: 'JobPaused'; readonly data: { readonly pausedAt: string } }
  | { readonly type: 'JobResumed'; readonly data: { readonly resumedAt: string } };

export type JobSnapshot =
  | { readonly status: 'absent'; readonly revision: -1 }
  | {
      readonly status: 'defined';
      readonly revision: number;
      readonly definition: JobDefinition;
      readonly version: number;
      readonly paused: boolean;
    };

export const NO_JOB: JobSnapshot = { status: 'absent', revision: -1 };

/** A job that exists. */
export type DefinedJob = Extract<JobSnapshot, { status: 'defined' }>;

export function foldJob(events: readonly JobEvent[]): JobSnapshot {
  return events.reduce(evolveJob, NO_JOB);
}

export type JobCommand =
  | { readonly type: 'DefineJob'; readonly definition: JobDefinition }
  | { readonly type: 'PauseJob'; readonly now: Date }
  | { readonly type: 'ResumeJob'; readonly now: Date };

export function evolveJob(state: JobSnapshot, event: JobEvent): JobSnapshot {
  const revision = state.revision + 1;
  switch (event.type) {
    case 'JobDefined':
      return {
        status: 'defined',
        revision,
        definition: event.data.definition,
        version: event.data.version,
        paused: state.status === 'defined' && state.paused,
      };
    case 'JobPaused':
    case 'JobResumed':
      if (state.status === 'absent') throw new Error(`${event.type} before JobDefined`);
      return { ...state, revision, paused: event.type === 'JobPaused' };
    default: {
      const unknown: never = event;
      throw new Error(`unknown job event ${JSON.stringify(unknown)}`);
    }
  }
}

/** Defining the same definition again decides nothing (PUT is idempotent); pausing a paused job too. */
export function decideJob(command: JobCommand, state: JobSnapshot): JobEvent[] {
  switch (command.type) {
    case 'DefineJob':
      if (state.status === 'defined') {
        if (state.definition.team !== command.definition.team)
          throw new DomainError('not-found', `job ${command.definition.name} not found`);
        if (sameDefinition(state.definition, command.definition)) return [];
      }
      return [
        {
          type: 'JobDefined',
          data: { definition: command.definition, version: state.status === 'defined' ? state.version + 1 : 1 },
        },
      ];
    case 'PauseJob':
    case 'ResumeJob': {
      if (state.status === 'absent') throw new DomainError('not-found', 'job not found');
      const pause = command.type === 'PauseJob';
      if (state.paused === pause) return [];
      return pause
        ? [{ type: 'JobPaused', data: { pausedAt: command.now.toISOString() } }]
        : [{ type: 'JobResumed', data: { resumedAt: command.now.toISOString() } }];
    }
    default: {
      const unknown: never = command;
      throw new Error(`unknown job command ${JSON.stringify(unknown)}`);
    }
  }
}

function sameDefinition(a: JobDefinition, b: JobDefinition): boolean {
  return canonical(a) === canonical(b);
}

/** JSON with sorted keys: key order in a request does not make a new version. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
