import {
  DomainError,
  foldRun,
  runStreamId,
  type Caller,
  type PresentRun,
  type RunEvent,
  type RunSnapshot,
} from '@chronicle/domain';
import type { EventStore, RecordedEvent } from '@chronicle/event-store';
import { toDomainEvent } from '../unit-of-work/stream-command';

/** The run's events, in order, and the state they fold to; as of an instant, those recorded by then. */
export async function readRun(
  eventStore: EventStore,
  runId: string,
  asOf?: Date,
): Promise<{ recorded: readonly RecordedEvent[]; state: RunSnapshot }> {
  const recorded = await eventStore.readStream(runStreamId(runId), asOf === undefined ? {} : { until: asOf });
  return { recorded, state: foldRun(recorded.map(toDomainEvent) as RunEvent[]) };
}

/**
 * The run if the caller may see it: the admin every run, a team its own, a
 * worker those of its queues (and team, unless a platform worker). Any other
 * run reads as absent: 404, so existence does not leak.
 */
export function visibleRun(caller: Caller, state: RunSnapshot, runId: string): PresentRun {
  const visible =
    state.status !== 'absent' &&
    (caller.kind === 'admin' ||
      (caller.kind === 'team' && state.definition.team === caller.team) ||
      (caller.kind === 'worker' &&
        (caller.team === null || state.definition.team === caller.team) &&
        caller.queues.includes(state.definition.queue)));
  if (!visible) throw new DomainError('not-found', `run ${runId} not found`);
  return state as PresentRun;
}
