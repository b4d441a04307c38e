import { DomainError } from '../domain-error';
import type { Priority, RetryPolicy } from '../run/run-events';
import {
  DEBOUNCE_SECONDS,
  HTTP_TARGET_QUEUE,
  type HttpTarget,
  TARGET_TIMEOUT_SECONDS,
  type DebouncePolicy,
  type JobDefinition,
  type OrderingOnRetry,
  type RateLimit,
  type UniquePolicy,
} from './job-decider';

/** What a job gets for each field its definition leaves out (docs/api.md, "Job definitions"). */
export const JOB_DEFAULTS = {
  priority: 'default',
  timeoutSeconds: 3600,
  retry: { maxAttempts: 3, baseSeconds: 30, maxSeconds: 1800 },
  concurrency: null,
  payload: null,
  schedule: null,
} as const satisfies Omit<JobDefinition, 'name' | 'team' | 'queue'>;

/** A definition as a client gives it: a queue or a target, one of them; the rest has defaults. */
export interface JobDefinitionInput {
  readonly queue?: string;
  readonly target?: { readonly url: string; readonly timeoutSeconds?: number | null };
  readonly priority?: Priority;
  readonly timeoutSeconds?: number;
  readonly retry?: RetryPolicy;
  readonly concurrency?: number;
  readonly payload?: unknown;
  /** Already accepted (parsed and checked), with its own defaults filled in. */
  readonly schedule?: unknown;
  readonly secretsAllowed?: readonly string[];
  readonly dryRun?: boolean;
  /** `seconds` is required with scope `for`, and refused without it. */
  readonly unique?: { readonly scope: UniquePolicy['scope']; readonly seconds?: number | null };
  readonly perKeyConcurrency?: number;
  readonly orderingOnRetry?: OrderingOnRetry;
  readonly rate?: RateLimitInput;
  readonly keyRate?: RateLimitInput;
  readonly debounce?: DebouncePolicy;
}

/** A rate as a client gives it: `burst` may be null (none: `limit`). */
type RateLimitInput = Omit<RateLimit, 'burst'> & { readonly burst?: number | null };

export function jobDefinition(name: string, team: string, input: JobDefinitionInput): JobDefinition {
  const target = input.target === undefined ? undefined : httpTarget(input.target);
  if ((input.queue === undefined) === (target === undefined))
    throw new DomainError('validation-error', 'a job names a queue or a target, one of them', {
      field: input.queue === undefined ? 'queue' : 'target',
    });
  return {
    name,
    team,
    queue: input.queue ?? HTTP_TARGET_QUEUE,
    priority: input.priority ?? JOB_DEFAULTS.priority,
    timeoutSeconds: input.timeoutSeconds ?? JOB_DEFAULTS.timeoutSeconds,
    retry:
      input.retry === undefined
        ? JOB_DEFAULTS.retry
        : {
            maxAttempts: input.retry.maxAttempts,
            baseSeconds: input.retry.baseSeconds,
            maxSeconds: input.retry.maxSeconds,
          },
    concurrency: input.concurrency ?? JOB_DEFAULTS.concurrency,
    payload: input.payload ?? JOB_DEFAULTS.payload,
    schedule: input.schedule ?? JOB_DEFAULTS.schedule,
    ...(input.secretsAllowed === undefined || input.secretsAllowed.length === 0
      ? {}
      : { secretsAllowed: [...new Set(input.secretsAllowed)] }),
    ...(input.dryRun === true ? { dryRun: true } : {}),
    ...(input.unique === undefined ? {} : { unique: uniquePolicy(input.unique) }),
    ...(input.perKeyConcurrency === undefined ? {} : { perKeyConcurrency: input.perKeyConcurrency }),
    ...(input.orderingOnRetry === undefined ? {} : { orderingOnRetry: input.orderingOnRetry }),
    ...(input.rate === undefined ? {} : { rate: rateLimit(input.rate) }),
    ...(input.keyRate === undefined ? {} : { keyRate: rateLimit(input.keyRate) }),
    ...(input.debounce === undefined ? {} : { debounce: debouncePolicy(input.debounce) }),
    ...(target === undefined ? {} : { target }),
  };
}

/** Longer than any address a browser keeps, shorter than a header line's limit. */
const MAX_TARGET_URL_LENGTH = 2048;

/**
 * A target as the domain keeps it: an absolute http(s) URL without credentials or fragment, and its
 * timeout. Which addresses it may reach is the dispatcher's to check, when it calls (after DNS).
 */
function httpTarget(input: NonNullable<JobDefinitionInput['target']>): HttpTarget {
  const refuse = (field: string, why: string): never => {
    throw new DomainError('validation-error', `${field}: ${why}`, { field });
  };
  let url: URL | undefined;
  try {
    url = new URL(input.url);
  } catch {
    refuse('target.url', 'an absolute URL, such as https://hooks.example.com/run');
  }
  if (input.url.length > MAX_TARGET_URL_LENGTH) refuse('target.url', `at most ${MAX_TARGET_URL_LENGTH} characters`);
  if (url!.protocol !== 'https:' && url!.protocol !== 'http:') refuse('target.url', 'an https (or http) URL');
  if (url!.username !== '' || url!.password !== '')
    refuse('target.url', 'no user or password in it: the call is signed instead');
  if (url!.hash !== '') refuse('target.url', 'no fragment (#...)');
  const timeoutSeconds = input.timeoutSeconds ?? TARGET_TIMEOUT_SECONDS.default;
  if (
    !Number.isInteger(timeoutSeconds) ||
    timeoutSeconds < TARGET_TIMEOUT_SECONDS.min ||
    timeoutSeconds > TARGET_TIMEOUT_SECONDS.max
  )
    refuse(
      'target.timeoutSeconds',
      `whole seconds from ${TARGET_TIMEOUT_SECONDS.min} to ${TARGET_TIMEOUT_SECONDS.max}`,
    );
  return { url: url!.href, timeoutSeconds };
}

/** A debounce as the domain keeps it: whole seconds within DEBOUNCE_SECONDS. */
function debouncePolicy({ seconds }: DebouncePolicy): DebouncePolicy {
  if (!Number.isInteger(seconds) || seconds < DEBOUNCE_SECONDS.min || seconds > DEBOUNCE_SECONDS.max)
    throw new DomainError(
      'validation-error',
      `debounce.seconds: whole seconds from ${DEBOUNCE_SECONDS.min} to ${DEBOUNCE_SECONDS.max}`,
      { field: 'debounce.seconds' },
    );
  return { seconds };
}

/** A unique policy as the domain keeps it: `seconds` with scope `for` alone, where it is required. */
function uniquePolicy(input: NonNullable<JobDefinitionInput['unique']>): UniquePolicy {
  const { scope } = input;
  const seconds = input.seconds ?? undefined;
  if (scope !== 'for') {
    if (seconds !== undefined)
      throw new DomainError('validation-error', `unique.seconds: only with scope for, not ${scope}`, {
        field: 'unique.seconds',
      });
    return { scope };
  }
  if (seconds === undefined || !Number.isInteger(seconds) || seconds < 1)
    throw new DomainError('validation-error', 'unique.seconds: required with scope for, whole seconds >= 1', {
      field: 'unique.seconds',
    });
  return { scope, seconds };
}

/** A rate as the domain keeps it: its fields, `burst` only where it is not `limit` (its default). */
export function rateLimit(input: RateLimitInput): RateLimit {
  return {
    limit: input.limit,
    per: input.per,
    ...(input.burst === undefined || input.burst === null || input.burst === input.limit ? {} : { burst: input.burst }),
  };
}
