import { RunState } from '@chronicle/domain';
import { boolean, dateTime, integer, list, nullable, oneOf, shape, text, union } from '../http/body-schema';
import { ref } from '../http/named-schemas';
import { problemOfTypes } from '../http/problem-responses';
import { Payload, RUN_ID } from '../runs/run-answers';

/* What the worker protocol answers, for the OpenAPI document, and an example lease. */

/** A leased run: everything a worker needs to run it. */
export const LeasedRun = shape(
  {
    required: {
      runId: RUN_ID,
      job: text(),
      attempt: integer(1),
      idempotencyKey: { ...text(), description: 'the same for every attempt: use it for side effects' },
      fencingToken: {
        ...integer(0),
        description: 'grows with every lease of the run; every later call for the run carries it',
      },
      leaseExpiresAt: dateTime(),
      payload: ref(Payload),
    },
    optional: {
      notBefore: {
        ...dateTime(),
        description:
          'leased ahead of its due time (the lease asked for prefetchMs): start the run at this instant, not before; the lease runs from then',
      },
      dryRun: {
        ...boolean(),
        description:
          'the job is in dry run: log what the run would do, and have no effects (this server always says; absent: false)',
      },
      traceparent: {
        ...text(),
        description:
          "the W3C trace context of the request that enqueued the run, if it had one: the attempt's span links to it",
      },
      tracestate: { ...text(), description: "the same trace context's tracestate, if any" },
    },
  },
  'LeasedRun',
);

/** An example lease response. */
export const LEASES_EXAMPLE = {
  leases: [
    {
      runId: 'run_8K2',
      job: 'billing.export-invoices',
      attempt: 2,
      idempotencyKey: 'billing.export-invoices@2026-03-15T02:00:00+01:00',
      fencingToken: 41877,
      leaseExpiresAt: '2026-03-15T01:02:30Z',
      payload: { format: 'csv' },
    },
  ],
};

/** POST /v1/lease: the runs leased, none when nothing was ready within waitSeconds. */
export const Leases = shape({ required: { leases: list(ref(LeasedRun)) } }, 'Leases');

/** One run of a batch refused on its own (the others went through). */
export const RunRefusal = shape(
  {
    required: {
      runId: text(),
      problem: problemOfTypes(['stale-lease', 'not-found', 'conflict']),
    },
  },
  'RunRefusal',
);

/** A heartbeat that extended its lease. */
export const HeartbeatResult = shape(
  { required: { runId: RUN_ID, leaseExpiresAt: nullable(dateTime()) } },
  'HeartbeatResult',
);

/** POST /v1/runs:heartbeat: per heartbeat, in the order sent, its new expiry or its refusal. */
export const HeartbeatResults = shape(
  { required: { results: list(union(ref(HeartbeatResult), ref(RunRefusal))) } },
  'HeartbeatResults',
);

/** A completion taken: the run's state after it, and when a retry is due. */
export const CompletionResult = shape(
  {
    required: {
      runId: RUN_ID,
      state: oneOf([RunState.succeeded, RunState.retryWait, RunState.dead]),
      retryAt: { ...nullable(dateTime()), description: 'retry_wait: when the next attempt is due' },
    },
  },
  'CompletionResult',
);

/** POST /v1/runs:complete: per completion, in the order sent, its result or refusal; with `lease`, the next runs. */
export const CompletionResults = shape(
  {
    required: { results: list(union(ref(CompletionResult), ref(RunRefusal))) },
    optional: { leases: { ...list(ref(LeasedRun)), description: 'when the call asked to lease: the runs leased' } },
  },
  'CompletionResults',
);
