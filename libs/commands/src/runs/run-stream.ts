import type { Pool } from 'pg';
import {
  DomainError,
  foldRun,
  RUN_EVENT_SCHEMA_VERSION,
  runStreamId,
  type Caller,
  type PresentRun,
  type RunEvent,
  type RunSnapshot,
} from '@chronicle/domain';
import type { EventStore, RecordedEvent } from '@chronicle/event-store';
import { upsertRun } from '@chronicle/projections';
import { executeStreamCommand, toDomainEvent, type StreamCommandResult } from '../unit-of-work/stream-command';

/** The run's events, in order, and the state they fold to. */
export async function readRun(
  eventStore: EventStore,
  runId: string,
): Promise<{ recorded: readonly RecordedEvent[]; state: RunSnapshot }> {
  const recorded = await eventStore.readStream(runStreamId(runId));
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

/** Load, decide, append and write the `runs` row through, for a decision on one run. */
export function decideOnRun(
  eventStore: EventStore,
  pool: Pool,
  actor: string,
  runId: string,
  decide: (state: RunSnapshot) => RunEvent[],
): Promise<StreamCommandResult<RunSnapshot, RunEvent>> {
  return executeStreamCommand<RunSnapshot, RunEvent>(eventStore, pool, {
    streamId: runStreamId(runId),
    fold: foldRun,
    revisionOf: (state) => state.revision,
    decide,
    project: upsertRun,
    metadata: { actor, schemaVersion: RUN_EVENT_SCHEMA_VERSION },
  });
}
