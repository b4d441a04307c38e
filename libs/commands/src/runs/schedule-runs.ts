import {
  ABSENT,
  decide,
  evolve,
  runStreamId,
  type PresentRun,
  type RunScheduledData,
  type RunSnapshot,
} from '@chronicle/domain';
import type { UnitOfWork } from '@chronicle/event-store';
import { runsInsert } from '@chronicle/projections';
import { recordedMetadata } from '../unit-of-work/event-metadata';

/**
 * New runs, every one decided by the run decider (ScheduleRun) like any
 * other transition: one append expecting no stream for each, one insert of
 * their rows, sent with the append. The enqueue endpoints, backfills, the materialiser and the test
 * seeds all create runs here. Resolves with the runs as they now are.
 */
export async function scheduleNewRuns(
  uow: UnitOfWork,
  runs: readonly RunScheduledData[],
  metadata: Readonly<Record<string, unknown>>,
): Promise<PresentRun[]> {
  if (runs.length === 0) return [];
  const decided = runs.map((run) => {
    const events = decide({ type: 'ScheduleRun', run }, ABSENT);
    return { run, events, after: events.reduce<RunSnapshot>(evolve, ABSENT) as PresentRun };
  });
  const created = decided.map((d) => d.after);
  const recorded = recordedMetadata(metadata);
  await uow.append(
    decided.map(({ run, events }) => {
      // The run's team, as every later event of the run records it: the audit trail finds a team's runs by it.
      const withTeam = { ...recorded, team: run.team };
      return {
        streamId: runStreamId(run.runId),
        expected: 'no_stream' as const,
        events: events.map((e) => ({ type: e.type, data: e.data, metadata: withTeam })),
      };
    }),
    runsInsert(created),
  );
  return created;
}
