import {
  IDEMPOTENCY_KEY_PATTERN,
  IDEMPOTENCY_KEY_RULE,
  NAME_PATTERN,
  UNIQUE_KEY_PATTERN,
  UNIQUE_KEY_RULE,
} from '@chronicle/domain';
import { anyValue, array, integer, object, oneOf, text, type Accepted } from '../http/body-schema';

/* The bodies of enqueueing, validated by `CompiledBody`: one schema per body, its type from it. */

const ENQUEUE_FIELDS = {
  payload: anyValue(),
  runAt: text({ format: 'iso8601' }),
  delaySeconds: integer(0, 31_536_000),
  ifRunning: {
    ...oneOf(['queue', 'reject']),
    description:
      'reject: 409 concurrency-limit when the run would have to wait (the job has its limit of runs leased or due); queue (default): the run waits',
  },
  uniqueKey: {
    ...text({ pattern: UNIQUE_KEY_PATTERN, rule: UNIQUE_KEY_RULE }),
    example: 'customer-4711',
    description:
      "while a run of the job holds this key (by the job's `unique` rule; while-pending by default), enqueueing answers that run (200) instead of a new one",
  },
  concurrencyKey: {
    ...text({ pattern: UNIQUE_KEY_PATTERN, rule: UNIQUE_KEY_RULE }),
    example: 'customer-4711',
    description:
      "leased only while fewer than the job's perKeyConcurrency (1 unless it says) runs of the job with this key are leased; it waits ready meanwhile",
  },
  orderingKey: {
    ...text({ pattern: UNIQUE_KEY_PATTERN, rule: UNIQUE_KEY_RULE }),
    example: 'account-42',
    description:
      "the job's runs with this key are leased one at a time, in the order they were enqueued; a failed run with retries left holds the key until it succeeds or dies, unless the job's orderingOnRetry is skip",
  },
  debounceKey: {
    ...text({ pattern: UNIQUE_KEY_PATTERN, rule: UNIQUE_KEY_RULE }),
    example: 'doc-4711',
    description:
      "for a job with a `debounce`: the run is due its seconds after this enqueue's time; while a run of the job with this key waits unleased, that run is moved there and takes this payload instead (200, RunDebounced)",
  },
  ifDuplicate: {
    ...oneOf(['existing', 'reject']),
    description: 'existing (default): 200 with the run that holds the unique key; reject: 409 duplicate-run naming it',
  },
};

/** POST /v1/jobs/{name}/runs: neither runAt nor delaySeconds means due now. */
export const EnqueueBody = object({ required: {}, optional: ENQUEUE_FIELDS }, 'EnqueueBody');
export type EnqueueBody = Accepted<typeof EnqueueBody>;

/** POST /v1/runs:batch: up to 1,000 runs in one call, for bulk producers. */
export const BatchEnqueueBody = object(
  {
    required: {
      runs: array(
        object({
          required: { job: text({ pattern: NAME_PATTERN, rule: 'a job name' }) },
          optional: {
            ...ENQUEUE_FIELDS,
            idempotencyKey: text({ pattern: IDEMPOTENCY_KEY_PATTERN, rule: IDEMPOTENCY_KEY_RULE }),
          },
        }),
        { minItems: 1, maxItems: 1000 },
      ),
    },
  },
  'BatchEnqueueBody',
);
export type BatchEnqueueBody = Accepted<typeof BatchEnqueueBody>;
export type BatchRunBody = BatchEnqueueBody['runs'][number];
