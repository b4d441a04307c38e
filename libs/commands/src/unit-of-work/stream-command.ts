import type { Pool } from 'pg';
import type { EventStore, RecordedEvent } from '@chronicle/event-store';
import { upcastEvent } from '@chronicle/domain';
import type { Queryable } from '@chronicle/platform';
import { retryOnConflict } from './retry-on-conflict';
import { recordedMetadata } from './event-metadata';

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
 * through; again from a fresh read on a revision conflict. One unit of work:
 * with the log in the read models' database the append and the row update
 * are one transaction; otherwise the projector repairs a lagging row.
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
      events: events.map((e) => ({ type: e.type, data: e.data, metadata: recordedMetadata(command.metadata) })),
    };
    await eventStore.unitOfWork(pool, async ({ tx, append: appendEvents }) => {
      await appendEvents([append]);
      await command.project(tx, after);
    });
    return { state: after, events };
  });
}

/** A recorded event as the deciders fold it: its data upcast to today's shape (upcasting.ts). */
export function toDomainEvent(event: RecordedEvent): DomainEvent {
  return upcastEvent(event);
}
