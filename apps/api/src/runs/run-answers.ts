import { PRIORITIES, RUN_ID_PATTERN, RUN_STATES, RunEventType } from '@chronicle/domain';
import { boolean, dateTime, integer, list, nullable, oneOf, shape, text } from '../http/body-schema';
import { ref } from '../http/named-schemas';

/* What the API answers about runs, for the OpenAPI document (runView and the controllers build them). */

/** A job's or run's payload: any JSON value, carried as it was given. */
export const Payload = { title: 'Payload', description: 'any JSON value, at most 256 KB, carried as it was given' };

export const RUN_ID = { ...text({ pattern: RUN_ID_PATTERN, rule: 'a run id' }), example: 'run_8K2' };

const RUN_FIELDS = {
  runId: RUN_ID,
  job: { ...text(), example: 'billing.export-invoices' },
  state: oneOf(RUN_STATES),
  dueAt: { ...dateTime(), description: 'the time it was made for' },
  availableAt: {
    ...dateTime(),
    description:
      'when it is ready to lease, while it waits: its dueAt, later when a debounce moved it (RunDebounced) or a retry waits',
  },
  attempt: { ...integer(0), description: 'attempts started so far' },
  idempotencyKey: {
    ...text(),
    description: 'the same for every attempt: use it for side effects',
    example: 'billing.export-invoices@2026-03-15T02:00:00+01:00',
  },
  queue: text(),
  priority: oneOf(PRIORITIES),
  leaseExpiresAt: { ...nullable(dateTime()), description: 'while leased' },
  lastError: nullable(text()),
  jobVersion: {
    ...nullable(integer(1)),
    description: "the version of the job's definition it was made from (null: a run recorded before runs said)",
  },
  dryRun: {
    ...boolean(),
    description: 'made from a job in dry run: its worker was told to log what it would do, with no effects',
  },
  concurrencyKey: {
    ...nullable(text()),
    description:
      "the concurrency key it was enqueued with: its job's perKeyConcurrency limits its key's leased runs; null: none",
  },
  orderingKey: {
    ...nullable(text()),
    description:
      'the ordering key it was enqueued with: the runs of its job with this key are leased one at a time, in orderingSeq order; null: none',
  },
  orderingSeq: {
    ...nullable(integer(1)),
    description: "its place in its ordering key's order, given when it was enqueued (lower first); null: no key",
  },
  debounceKey: {
    ...nullable(text()),
    description: "the debounce key it was enqueued with: its job's `debounce` moves it while it waits; null: none",
  },
  uniqueKey: {
    ...nullable(text()),
    description: "the unique key it was enqueued with, which it holds by its job's `unique` rule; null: none",
  },
};

/** What an answer `?asOf=` an instant adds: the instant, and the stream's revision the state reflects. */
export const AS_OF_FIELDS = {
  asOf: { ...dateTime(), description: 'with ?asOf=: the state folded from the events recorded by then' },
  revision: { ...integer(0), description: "with ?asOf=: the revision of the stream's last event by then" },
};

/** A run: GET /v1/runs/{id}, and what enqueueing, cancelling, replaying and discarding answer. */
export const Run = shape({ required: RUN_FIELDS, optional: AS_OF_FIELDS }, 'Run');

/** A run a call enqueued, or found already there (a repeated idempotency key or fire time). */
export const EnqueuedRun = shape(
  { required: { ...RUN_FIELDS, created: { ...boolean(), description: 'false: the run was there already' } } },
  'EnqueuedRun',
);

/** The runs of POST /v1/runs:batch and :backfill, in the order asked. */
export const EnqueuedRuns = shape({ required: { runs: list(ref(EnqueuedRun)) } }, 'EnqueuedRuns');

const EventMetadata = shape(
  {
    required: {
      actor: { ...text(), description: 'who decided', example: 'team:billing' },
      schemaVersion: integer(1),
    },
    optional: {
      causationId: text(),
      correlationId: text(),
      team: { ...text(), description: "the run's team (on every run event; RunScheduled's data holds it too)" },
      // RunPlaceMetadata: only on run events recorded while every event repeated the run's place.
      queue: { ...text(), description: "the run's queue, on older events (RunScheduled's data holds it)" },
      priority: { ...oneOf(PRIORITIES), description: "the run's priority, on older events (as queue)" },
      dueAt: { ...dateTime(), description: "the run's due time, on older events (as queue)" },
    },
  },
  'EventMetadata',
);

const RunEvent = shape(
  {
    required: {
      type: oneOf(Object.values(RunEventType)),
      revision: { ...integer(0), description: "the event's place in the run's stream" },
      recordedAt: dateTime(),
      data: { type: 'object', description: "the event's data, as written to the log" },
      metadata: ref(EventMetadata),
    },
  },
  'RunEvent',
);

/** GET /v1/runs/{id}/events: the run's whole history, in order. */
export const RunEvents = shape({ required: { events: list(ref(RunEvent)) } }, 'RunEvents');
