import type { BulkOperationRow, BulkSampleItem } from '@chronicle/commands';
import {
  BULK_ACTIONS,
  BULK_STATUSES,
  CANCELLABLE_STATES,
  NAME_PATTERN,
  NAME_RULE,
  TEAM_ID_PATTERN,
  TEAM_ID_RULE,
  type BulkFilter,
} from '@chronicle/domain';
import {
  boolean,
  dateTime,
  integer,
  list,
  nullable,
  object,
  oneOf,
  shape,
  text,
  type Accepted,
} from '../http/body-schema';

/*
 * The bodies and answers of /v1/bulk-operations (docs/api.md, "Bulk operations"), for REST and for
 * GraphQL's arguments alike.
 */

/** Which runs or jobs: each field given narrows the selection; which fields apply depends on the action. */
export const BulkFilterBody = object({
  required: {},
  optional: {
    team: {
      ...text({ pattern: TEAM_ID_PATTERN, rule: TEAM_ID_RULE }),
      description: "the admin: this team's only (else every team's); a team token: its own, or left out",
    },
    job: { ...text({ pattern: NAME_PATTERN, rule: NAME_RULE }), description: "this job's only" },
    queue: { ...text({ pattern: NAME_PATTERN, rule: NAME_RULE }), description: "this queue's only" },
    state: {
      ...oneOf(CANCELLABLE_STATES),
      description: 'cancel-runs: runs in this state (default: every waiting run)',
    },
    error: {
      ...text({ minLength: 1, maxLength: 500 }),
      description: 'cancel-runs, replay-dead, discard-dead: their last error contains this text (any case)',
    },
    dueAfter: { ...dateTime(), description: 'cancel-runs: due at or after this instant' },
    dueBefore: { ...dateTime(), description: 'cancel-runs: due before this instant' },
    deadAfter: { ...dateTime(), description: 'replay-dead, discard-dead: dead at or after this instant' },
    deadBefore: { ...dateTime(), description: 'replay-dead, discard-dead: dead before this instant' },
  },
});
export type BulkFilterBody = Accepted<typeof BulkFilterBody>;

export const BulkOperationBody = object(
  {
    required: {
      action: {
        ...oneOf(BULK_ACTIONS),
        description: 'what is done to each run or job the filter selects',
        example: 'cancel-runs',
      },
    },
    optional: {
      filter: BulkFilterBody,
      dryRun: {
        ...boolean(),
        default: false,
        description: 'count the runs or jobs the filter selects and show the first 10, act on none',
      },
    },
  },
  'BulkOperationBody',
);
export type BulkOperationBody = Accepted<typeof BulkOperationBody>;

/** The filter as the commands take it: the fields given, nothing null. */
export function bulkFilterOf(body: BulkFilterBody | null | undefined): BulkFilter {
  const given = Object.entries(body ?? {}).filter(([, value]) => value !== null && value !== undefined);
  return Object.fromEntries(given) as BulkFilter;
}

const SampleItem = shape(
  {
    required: {
      id: { ...text(), description: 'a run id, or a job name' },
      job: text(),
      team: text(),
      queue: text(),
      state: { ...text(), description: "a run's state, or a job's: active or paused" },
      dueAt: { ...nullable(dateTime()), description: 'a run: when it is due' },
      deadAt: { ...nullable(dateTime()), description: 'a dead run: when it died' },
      lastError: nullable(text()),
    },
  },
  'BulkSampleItem',
);

export const BulkPreviewAnswer = shape(
  {
    required: {
      action: oneOf(BULK_ACTIONS),
      dryRun: boolean(),
      matched: { ...integer(0), description: 'the runs or jobs the filter selects now' },
      sample: { ...list(SampleItem), description: 'the first 10 of them, in the order an operation takes them' },
    },
  },
  'BulkOperationPreview',
);

const Counts = {
  matched: { ...integer(0), description: 'what the selection held when the operation began' },
  processed: { ...integer(0), description: 'of those, looked at so far' },
  acted: {
    ...integer(0),
    description: 'cancelled, paused, resumed, replayed or discarded, each an event with the actor',
  },
  skipped: { ...integer(0), description: 'changed meanwhile (or done already), so left alone' },
};

export const BulkOperationAnswer = shape(
  {
    required: {
      id: { ...text(), example: 'bulk_019a3c1e2f7b7c4e8d2a5b6c7d8e9f01' },
      action: oneOf(BULK_ACTIONS),
      team: { ...nullable(text()), description: "the team acted on; null: the admin's, over every team" },
      actor: { ...text(), description: 'who started it: the actor of the events it causes' },
      filter: { type: 'object', description: 'the filter, as given' },
      snapshotAt: { ...dateTime(), description: 'its selection: what matched at this instant' },
      ...Counts,
      status: oneOf(BULK_STATUSES),
      error: { ...nullable(text()), description: 'failed: why' },
      createdAt: dateTime(),
      updatedAt: dateTime(),
      finishedAt: nullable(dateTime()),
    },
  },
  'BulkOperation',
);

export const BulkOperationsPage = shape(
  {
    required: {
      items: list(BulkOperationAnswer),
      nextCursor: { ...nullable(text()), description: 'pass as `cursor` for the next page; null on the last' },
    },
  },
  'BulkOperationsPage',
);

export interface BulkOperationView {
  readonly id: string;
  readonly action: string;
  readonly team: string | null;
  readonly actor: string;
  readonly filter: BulkFilter;
  readonly snapshotAt: string;
  readonly matched: number;
  readonly processed: number;
  readonly acted: number;
  readonly skipped: number;
  readonly status: string;
  readonly error: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly finishedAt: string | null;
}

export function bulkOperationView(row: BulkOperationRow): BulkOperationView {
  return {
    id: row.id,
    action: row.action,
    team: row.team,
    actor: row.actor,
    filter: row.filter,
    snapshotAt: row.snapshot_at.toISOString(),
    matched: row.matched,
    processed: row.processed,
    acted: row.acted,
    skipped: row.skipped,
    status: row.status,
    error: row.error,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    finishedAt: row.finished_at?.toISOString() ?? null,
  };
}

export interface BulkSampleView {
  readonly id: string;
  readonly job: string;
  readonly team: string;
  readonly queue: string;
  readonly state: string;
  readonly dueAt: string | null;
  readonly deadAt: string | null;
  readonly lastError: string | null;
}

export function bulkSampleView(item: BulkSampleItem): BulkSampleView {
  return { ...item, dueAt: item.dueAt?.toISOString() ?? null, deadAt: item.deadAt?.toISOString() ?? null };
}
