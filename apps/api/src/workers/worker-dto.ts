import { MAX_PREFETCH_MS, MAX_RETRY_AFTER_SECONDS, NAME_PATTERN, RUN_ID_PATTERN } from '@chronicle/domain';
import { array, boolean, integer, object, oneOf, text, type Accepted, type Fields } from '../http/body-schema';

/* The bodies of the worker protocol, validated by `CompiledBody`: one schema per body, its type from it. */

const FENCING_TOKEN = integer(0);
const LEASE_SECONDS = integer(1, 3600);
const RUN_ID = text({ pattern: RUN_ID_PATTERN, rule: 'a run id' });

/** The items of a batch call: 1 to 100, each the single call's body with the run it is for. */
function perRun<R extends Fields, O extends Fields>(fields: { required: R; optional: O }) {
  const item = object({ required: { ...fields.required, runId: RUN_ID }, optional: fields.optional });
  return array(item, { minItems: 1, maxItems: 100 });
}

const LEASE_NEXT_FIELDS = {
  required: {
    queues: array(text({ pattern: NAME_PATTERN, rule: 'a queue name' }), { minItems: 1, maxItems: 50 }),
    max: integer(1, 100),
  },
  optional: {
    leaseSeconds: LEASE_SECONDS,
    workerId: text({ maxLength: 200 }),
    // Opt-in: runs due within this window are leased too, each with its due time as notBefore.
    prefetchMs: integer(0, MAX_PREFETCH_MS),
  },
};

/** What to lease: the `lease` of POST /v1/runs:complete. */
export const LeaseNextBody = object(LEASE_NEXT_FIELDS, 'LeaseNextBody');
export type LeaseNextBody = Accepted<typeof LeaseNextBody>;

/** POST /v1/lease: what to lease, long-polling up to waitSeconds. */
export const LeaseBody = object(
  { required: LEASE_NEXT_FIELDS.required, optional: { ...LEASE_NEXT_FIELDS.optional, waitSeconds: integer(0, 30) } },
  'LeaseBody',
);
export type LeaseBody = Accepted<typeof LeaseBody>;

/** The attempt's W3C trace context (docs/operations.md, "Traces"), for the run's events; a malformed one is left out. */
const ATTEMPT_TRACE = { traceparent: text({ maxLength: 55 }), tracestate: text({ maxLength: 512 }) };

const HEARTBEAT_FIELDS = {
  required: { fencingToken: FENCING_TOKEN },
  optional: { leaseSeconds: LEASE_SECONDS, ...ATTEMPT_TRACE },
};

/** POST /v1/runs/{id}/heartbeat */
export const HeartbeatBody = object(HEARTBEAT_FIELDS, 'HeartbeatBody');
export type HeartbeatBody = Accepted<typeof HeartbeatBody>;

/** POST /v1/runs:heartbeat: up to 100 heartbeats in one transaction. */
export const HeartbeatManyBody = object({ required: { heartbeats: perRun(HEARTBEAT_FIELDS) } }, 'HeartbeatManyBody');
export type HeartbeatManyBody = Accepted<typeof HeartbeatManyBody>;

const COMPLETE_FIELDS = {
  required: { fencingToken: FENCING_TOKEN, outcome: oneOf(['success', 'failure']) },
  optional: {
    error: text({ maxLength: 10_000 }),
    retryable: boolean(),
    retryAfterSeconds: {
      ...integer(0, MAX_RETRY_AFTER_SECONDS),
      description:
        "a retryable failure's retry waits this long instead of the job's backoff (a downstream's Retry-After)",
    },
    ...ATTEMPT_TRACE,
  },
};

/** POST /v1/runs/{id}/complete */
export const CompleteBody = object(COMPLETE_FIELDS, 'CompleteBody');
export type CompleteBody = Accepted<typeof CompleteBody>;

/**
 * POST /v1/runs:complete: up to 100 completions in one transaction; with `lease`, the worker's next runs,
 * leased in the same transaction and sent in the answer (no waiting).
 */
export const CompleteManyBody = object(
  { required: { completions: perRun(COMPLETE_FIELDS) }, optional: { lease: LeaseNextBody } },
  'CompleteManyBody',
);
export type CompleteManyBody = Accepted<typeof CompleteManyBody>;
