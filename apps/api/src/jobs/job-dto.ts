import {
  DEBOUNCE_SECONDS,
  JOB_DEFAULTS,
  NAME_PATTERN,
  NAME_RULE,
  PRIORITIES,
  UNIQUE_SCOPES,
  ORDERING_ON_RETRY,
  RATE_PERIODS,
  TARGET_TIMEOUT_SECONDS,
} from '@chronicle/domain';
import { anyObject, anyValue, array, boolean, integer, object, oneOf, text, type Accepted } from '../http/body-schema';
import { documentedAs } from '../http/named-schemas';
import { Payload } from '../runs/run-answers';
import { ScheduleBody } from './schedule-schemas';

/* The body of a job's definition, validated by `CompiledBody` (and GraphQL's defineJob): its type from it. */

/** A path into a payload, as the secret scanner names them: `$`, then `.name` or `[index]` steps. */
const SECRET_PATH = /^\$(?:\.[A-Za-z_][A-Za-z0-9_-]*|\[\d{1,6}\]){1,32}$/;

const RETRY = object(
  {
    required: {
      maxAttempts: { ...integer(1, 100), description: 'attempts in all, the first included' },
      baseSeconds: integer(0, 86_400),
      maxSeconds: {
        ...integer(0, 604_800),
        description: 'full-jitter backoff: rand(0, min(maxSeconds, baseSeconds * 2^(n-1)))',
      },
    },
  },
  'RetryBody',
);

const UNIQUE = object(
  {
    required: {
      scope: {
        ...oneOf(UNIQUE_SCOPES),
        description:
          'how long a run enqueued with a uniqueKey holds it: while-pending (scheduled or retry_wait), while-not-finished (leased too), or for `seconds` from its enqueue',
      },
    },
    optional: { seconds: { ...integer(1, 31_536_000), description: 'scope for: how long, from the enqueue' } },
  },
  'UniqueBody',
);

/** A rate limit (docs/api.md, "Rate limits"): a job's rate and keyRate, a queue's rate. */
export const RateBody = object(
  {
    required: {
      limit: { ...integer(1, 1_000_000), description: 'runs leased per `per`, at most' },
      per: { ...oneOf(RATE_PERIODS), description: 'the period `limit` counts over' },
    },
    optional: {
      burst: {
        ...integer(1, 1_000_000),
        description: 'runs leased at once, at most, after a quiet spell (the bucket size); none: limit',
      },
    },
  },
  'RateBody',
);

const DEBOUNCE = object(
  {
    required: {
      seconds: {
        ...integer(DEBOUNCE_SECONDS.min, DEBOUNCE_SECONDS.max),
        description:
          "a run enqueued with a debounceKey is due this long after the enqueue's time, and each later enqueue of the key moves it again while it waits",
      },
    },
  },
  'DebounceBody',
);

const TARGET = object(
  {
    required: {
      url: {
        ...text({ minLength: 1, maxLength: 2048 }),
        example: 'https://hooks.example.com/chronicle',
        description:
          'where each run is POSTed, signed (docs/api.md, "HTTP-target jobs"); plain http and private addresses only where the operator allows them',
      },
    },
    optional: {
      timeoutSeconds: {
        ...integer(TARGET_TIMEOUT_SECONDS.min, TARGET_TIMEOUT_SECONDS.max),
        default: TARGET_TIMEOUT_SECONDS.default,
        description: 'a call answering later than this is a retryable failure',
      },
    },
  },
  'TargetBody',
);

/** PUT /v1/jobs/{name}: a job's definition (docs/api.md, "Job definitions"); the name comes from the path. */
export const JobBody = object(
  {
    required: {},
    optional: {
      queue: {
        ...text({ pattern: NAME_PATTERN, rule: NAME_RULE }),
        description: `a queue the token was granted, its workers lease the runs: ${NAME_RULE}; or a target instead`,
      },
      target: {
        ...TARGET,
        description: 'an HTTP target instead of a queue: the scheduler POSTs each run to it',
      },
      priority: { ...oneOf(PRIORITIES), default: JOB_DEFAULTS.priority },
      timeoutSeconds: {
        ...integer(1, 21_600),
        default: JOB_DEFAULTS.timeoutSeconds,
        description: 'a lease and its heartbeats never reach past this',
      },
      retry: { ...RETRY, default: JOB_DEFAULTS.retry },
      concurrency: {
        ...integer(1, 10_000),
        description: 'at most this many of its runs leased at once; none: no limit',
      },
      perKeyConcurrency: {
        ...integer(1, 10_000),
        description:
          "at most this many of its runs with one concurrencyKey (a run's, such as a customer id) leased at once; none: 1",
      },
      rate: {
        ...RateBody,
        description: 'at most this rate of its runs leased, across every worker; none: no limit',
      },
      keyRate: {
        ...RateBody,
        description:
          'at most this rate of its runs with one concurrencyKey leased, each key counted apart; none: no limit',
      },
      orderingOnRetry: {
        ...oneOf(ORDERING_ON_RETRY),
        description:
          'a failed run of an orderingKey with retries left: hold (default) keeps the later runs of its key waiting until it succeeds or dies; skip lets them go on meanwhile',
      },
      payload: documentedAs(anyValue(), Payload, 'what each run gets; default null'),
      secretsAllowed: {
        ...array(text({ pattern: SECRET_PATH, rule: 'a path such as $.sftp.hostKey or $.hosts[0]' }), {
          maxItems: 50,
        }),
        example: ['$.sftp.hostKey'],
        description:
          'paths of its payloads the secret scanner lets through (false positives): a path and everything under it',
      },
      dryRun: {
        ...boolean(),
        default: false,
        description:
          'Dry run: runs are scheduled and leased as usual, marked dry (`dryRun` in the lease and the run); the handler logs what it would do and has no effects',
      },
      unique: {
        ...UNIQUE,
        description: 'runs enqueued with a uniqueKey: how long each holds it; none: while-pending',
      },
      debounce: {
        ...DEBOUNCE,
        description:
          'runs enqueued with a debounceKey: one waits per key, moved and given the newest payload by each enqueue of it; none: debounceKey refused',
      },
      // Only an object here: the domain checks the schedule itself, its refusals invalid-schedule.
      schedule: documentedAs(anyObject(), ScheduleBody, 'none: runs are enqueued only'),
    },
  },
  'JobBody',
);
export type JobBody = Accepted<typeof JobBody>;
