import {
  PRIORITIES,
  DEFAULT_DST_POLICY,
  DEFAULT_OVERLAP_POLICY,
  UNIQUE_SCOPES,
  ORDERING_ON_RETRY,
  RATE_PERIODS,
  HTTP_TARGET_QUEUE,
} from '@chronicle/domain';
import { boolean, dateTime, integer, list, nullable, oneOf, shape, text } from '../http/body-schema';
import { ref } from '../http/named-schemas';
import { AS_OF_FIELDS, Payload } from '../runs/run-answers';
import { JobSchedule } from './schedule-schemas';

/* What the API answers about jobs, for the OpenAPI document, and the nightly export, its example job. */

export const RetryPolicy = shape(
  {
    required: {
      maxAttempts: { ...integer(1, 100), description: 'attempts in all, the first included' },
      baseSeconds: integer(0),
      maxSeconds: {
        ...integer(0),
        description: 'full-jitter backoff: rand(0, min(maxSeconds, baseSeconds * 2^(n-1)))',
      },
    },
  },
  'RetryPolicy',
);

/** A job: its definition with every default filled in, its version and whether it is paused. */
/** A rate limit: `limit` runs leased per `per`, at most `burst` at once (absent: limit). */
export const RateAnswer = shape(
  { required: { limit: integer(1), per: oneOf(RATE_PERIODS) }, optional: { burst: integer(1) } },
  'Rate',
);

export const Job = shape(
  {
    required: {
      name: { ...text(), example: 'billing.export-invoices' },
      team: text(),
      queue: text(),
      priority: oneOf(PRIORITIES),
      timeoutSeconds: integer(1),
      retry: ref(RetryPolicy),
      concurrency: { ...nullable(integer(1)), description: 'at most this many runs leased at once; null: no limit' },
      payload: ref(Payload),
      schedule: JobSchedule,
      version: { ...integer(1), description: 'grows with every change of the definition' },
      paused: { ...boolean(), description: "a paused job's runs are neither leased nor materialised" },
      dryRun: {
        ...boolean(),
        description:
          "its runs are leased as usual, marked dry: the worker's handler logs what it would do, with no effects",
      },
    },
    optional: {
      ...AS_OF_FIELDS,
      secretsAllowed: { ...list(text()), description: 'payload paths the secret scanner lets through' },
      unique: {
        ...shape({ required: { scope: oneOf(UNIQUE_SCOPES) }, optional: { seconds: integer(1) } }),
        description: 'how long a run enqueued with a uniqueKey holds it; absent: while-pending',
      },
      perKeyConcurrency: {
        ...integer(1),
        description: 'at most this many runs with one concurrencyKey leased at once; absent: 1',
      },
      rate: {
        ...RateAnswer,
        description: 'at most this rate of its runs leased; absent: no limit',
      },
      keyRate: {
        ...RateAnswer,
        description: 'at most this rate of its runs with one concurrencyKey leased, each key apart; absent: no limit',
      },
      orderingOnRetry: {
        ...oneOf(ORDERING_ON_RETRY),
        description: 'what a failed run of an orderingKey with retries left does to its key; absent: hold',
      },
      debounce: {
        ...shape({ required: { seconds: integer(1) } }),
        description:
          'a run enqueued with a debounceKey waits this long after the newest enqueue of its key; absent: none',
      },
      target: {
        ...shape({ required: { url: text(), timeoutSeconds: integer(1) } }),
        description: `an HTTP-target job's: the scheduler POSTs each run there (its queue is ${HTTP_TARGET_QUEUE}); absent: a worker's job`,
      },
      signingSecret: {
        ...text(),
        description:
          'the secret its calls are signed with: in the answer that made the target, once, and never again (rotate it to get another)',
      },
    },
  },
  'Job',
);

/** Every version of a job's definition, oldest first: who defined it, when, and what changed. */
export const JobVersions = shape(
  {
    required: {
      name: text(),
      versions: list(
        shape({
          required: {
            version: integer(1),
            definedAt: dateTime(),
            actor: { ...nullable(text()), example: 'team:billing:token:tok_3q8Zx1mVd0Kf2LrA' },
            definition: { type: 'object', description: 'the definition as given, before defaults' },
            changes: {
              ...list(
                shape({
                  required: { field: { ...text(), example: 'retry.maxAttempts' } },
                  optional: {
                    before: { description: 'absent: the field was new' },
                    after: { description: 'absent: removed' },
                  },
                }),
              ),
              description: 'from the version before (the first: every field)',
            },
          },
        }),
      ),
    },
  },
  'JobVersions',
);

/** An HTTP-target job's new signing secret, and until when the one it replaced still signs. */
export const SigningSecret = shape(
  {
    required: {
      secret: { ...text(), description: 'shown this once', example: 'whsec_9dX2...' },
      previousValidUntil: dateTime(),
    },
  },
  'SigningSecret',
);

/** A schedule's or job's next fire times, as UTC instants. */
export const FireTimes = shape({ required: { fireTimes: list(dateTime()) } }, 'FireTimes');

/** The nightly export, as the body of PUT /v1/jobs/billing.export-invoices (the name is the path's). */
export const NIGHTLY_EXPORT = {
  schedule: { cron: '0 2 * * *', timeZone: 'Europe/Berlin', jitterSeconds: 0, missedRunPolicy: 'run_once' },
  queue: 'billing',
  priority: 'critical',
  timeoutSeconds: 900,
  retry: { maxAttempts: 5, baseSeconds: 30, maxSeconds: 1800 },
  concurrency: 1,
  payload: { format: 'csv' },
} as const;

/** What PUT answers for it: the definition with its defaults, version 1. */
export const NIGHTLY_EXPORT_JOB = {
  name: 'billing.export-invoices',
  team: 'billing',
  ...NIGHTLY_EXPORT,
  schedule: { ...NIGHTLY_EXPORT.schedule, dstPolicy: DEFAULT_DST_POLICY, overlapPolicy: DEFAULT_OVERLAP_POLICY },
  dryRun: false,
  version: 1,
  paused: false,
};
