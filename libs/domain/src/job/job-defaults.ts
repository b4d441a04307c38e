import { DomainError } from '../domain-error';
import type { Priority, RetryPolicy } from '../run/run-events';
import {
  DEBOUNCE_SECONDS,
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

/** A definition as a client gives it: the queue is required, the rest has defaults. */
export interface JobDefinitionInput {
  readonly queue: string;
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
  return {
    name,
    team,
    queue: input.queue,
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
  };
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
