import type { Pool } from 'pg';
import { ADMIN_EVENT_SCHEMA_VERSION, type AdminEventType } from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import type { Queryable } from '@chronicle/platform';
import { recordedMetadata } from '../unit-of-work/event-metadata';

export interface AdminEvent {
  readonly type: AdminEventType;
  readonly data: Readonly<Record<string, unknown>>;
}

/** A change of the admin's settings: what it records in the log, and its write of their tables. */
export interface AdminChange<Answer> {
  readonly streamId: string;
  /** Reads (and locks) what the change depends on; no event when nothing would change. */
  decide(tx: Queryable): Promise<{ readonly event: AdminEvent | null; readonly answer: Answer }>;
  write(tx: Queryable): Promise<void>;
}

/**
 * The admin's settings (teams, tokens, grants, quotas) are tables the API reads on every call, and
 * every change of them is an event with its actor, in one unit of work with the tables' write: one
 * transaction when the log shares the database, the event first otherwise. The tables are not
 * rebuilt from these events: a token's hash, which authentication needs, never goes into the log.
 */
export function recordAdminChange<Answer>(
  eventStore: EventStore,
  pool: Pool,
  actor: string,
  change: AdminChange<Answer>,
): Promise<Answer> {
  return eventStore.unitOfWork(pool, async (uow) => {
    const { event, answer } = await change.decide(uow.tx);
    if (event === null) return answer;
    const metadata = recordedMetadata({ actor, schemaVersion: ADMIN_EVENT_SCHEMA_VERSION });
    await uow.append([{ streamId: change.streamId, expected: 'any', events: [{ ...event, metadata }] }]);
    await change.write(uow.tx);
    return answer;
  });
}
