import type { Pool } from 'pg';
import { PostgresEventStore, type EventStore, type RecordedEvent } from '@chronicle/event-store';
import { withTransaction, type Queryable } from '@chronicle/platform';
import { retryOnConflict } from './retry-on-conflict';

export interface DomainEvent {
  readonly type: string;
  readonly data: unknown;
}

export interface StreamCommand<State, Event extends DomainEvent> {
  readonly streamId: string;
  readonly fold: (events: readonly Event[]) => State;
  readonly revisionOf: (state: State) => number;
  readonly decide: (state: State) => Event[];
  /** Write-through of the read model from the state after the new events. */
  readonly project: (db: Queryable, state: State) => Promise<void>;
  readonly metadata: Readonly<Record<string, unknown>>;
}

export interface StreamCommandResult<State, Event> {
  readonly state: State;
  readonly events: readonly Event[];
}

/**
 * Load, decide, append with the expected revision, write the read model
 * through; again from a fresh read on a revision conflict. With the
 * PostgreSQL store the append and the row update are one transaction; with
 * another store the projector repairs a lagging row.
 */
export function executeStreamCommand<State, Event extends DomainEvent>(
  eventStore: EventStore,
  pool: Pool,
  command: StreamCommand<State, Event>,
): Promise<StreamCommandResult<State, Event>> {
  return retryOnConflict(async () => {
    const history = (await eventStore.readStream(command.streamId)).map(toDomainEvent) as Event[];
    const state = command.fold(history);
    const events = command.decide(state);
    if (events.length === 0) return { state, events };
    const after = command.fold([...history, ...events]);
    const revision = command.revisionOf(state);
    const append = {
      streamId: command.streamId,
      expected: revision < 0 ? ('no_stream' as const) : BigInt(revision),
      events: events.map((e) => ({ type: e.type, data: e.data, metadata: command.metadata })),
    };
    if (eventStore instanceof PostgresEventStore) {
      await withTransaction(pool, async (tx) => {
        await eventStore.appendWith(tx, [append]);
        await command.project(tx, after);
      });
    } else {
      await eventStore.appendToStreams([append]);
      await command.project(pool, after);
    }
    return { state: after, events };
  });
}

export function toDomainEvent(event: RecordedEvent): DomainEvent {
  return { type: event.type, data: event.data };
}
