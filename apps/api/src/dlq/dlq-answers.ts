import type { AttemptView } from '@chronicle/commands';
import type { DeathReason } from '@chronicle/domain';
import { dateTime, integer, list, nullable, oneOf, shape, text } from '../http/body-schema';
import { ref } from '../http/named-schemas';
import { RUN_ID } from '../runs/run-answers';

/* What the dead-letter queue answers, for the OpenAPI document. */

const DEAD_RUN_FIELDS = {
  runId: RUN_ID,
  job: text(),
  attempt: integer(1),
  reason: oneOf(['attempts_exhausted', 'not_retryable', 'lease_expired'] satisfies DeathReason[]),
  lastError: nullable(text()),
  deadAt: dateTime(),
};

/** A dead run, not discarded. */
export const DeadRun = shape({ required: DEAD_RUN_FIELDS }, 'DeadRun');

/** GET /v1/dlq: a page of dead runs, newest first. */
export const DeadRunPage = shape(
  {
    required: {
      items: list(ref(DeadRun)),
      nextCursor: { ...nullable(text()), description: 'pass as `cursor` for the next page; null on the last' },
    },
    optional: {
      unavailable: {
        ...list(shape({ required: { server: text(), shards: list(integer(0)) } }, 'UnavailableShards')),
        description: "present when a server of runs did not answer: this page lacks its shards' dead runs",
      },
    },
  },
  'DeadRunPage',
);

const Attempt = shape(
  {
    required: {
      attempt: integer(1),
      workerId: nullable(text()),
      startedAt: dateTime(),
      endedAt: nullable(dateTime()),
      outcome: oneOf(['success', 'failure', 'lease_expired', 'running'] satisfies Array<AttemptView['outcome']>),
      error: nullable(text()),
    },
  },
  'Attempt',
);

/** GET /v1/dlq/{id}: a dead run with every attempt it had. */
export const DeadRunDetail = shape({ required: { ...DEAD_RUN_FIELDS, attempts: list(ref(Attempt)) } }, 'DeadRunDetail');
