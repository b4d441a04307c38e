import {
  decide,
  decideJob,
  DomainError,
  foldJob,
  JOB_EVENT_SCHEMA_VERSION,
  jobStillSelected,
  jobStreamId,
  RUN_EVENT_SCHEMA_VERSION,
  runStillSelected,
  type BulkAction,
  type JobCommand,
  type JobSnapshot,
  type JobEvent,
  type PresentRun,
  type RunCommand,
  type RunEvent,
} from '@chronicle/domain';
import { WrongExpectedRevisionError } from '@chronicle/event-store';
import { upsertJob } from '@chronicle/projections';
import type { RunServer } from '../shards/run-servers';
import { executeStreamCommand } from '../unit-of-work/stream-command';
import { lockAndLoadRuns } from '../workers/complete-runs.sql';
import type { BulkOperationRow } from './bulk-operations.sql';

/**
 * One batch of an operation on one server: each target locked and read again, checked against the
 * filter (runStillSelected, jobStillSelected), decided by the run's or the job's decider, and appended
 * with the operation's caller as actor. A target that no longer matches, or that the decider turns down
 * (a run cancelled or replayed meanwhile, a job paused already), is skipped: an operation run twice, or
 * resumed, never acts twice on one. Answers how many it acted on.
 */
export async function actOnTargets(
  server: RunServer,
  operation: BulkOperationRow,
  targets: readonly string[],
  now: Date,
): Promise<number> {
  const metadata = (schemaVersion: number): Record<string, unknown> => ({
    actor: operation.actor,
    schemaVersion,
    // The operation caused it; the request that started the operation correlates it.
    causationId: operation.id,
    ...(operation.correlation_id === null ? {} : { correlationId: operation.correlation_id }),
  });
  switch (operation.action) {
    case 'cancel-runs':
    case 'replay-dead':
    case 'discard-dead':
      return actOnRuns(server, operation, targets, metadata(RUN_EVENT_SCHEMA_VERSION));
    case 'pause-jobs':
    case 'resume-jobs':
      return actOnJobs(server, operation, targets, metadata(JOB_EVENT_SCHEMA_VERSION), now);
    default: {
      const unknown: never = operation.action;
      throw new Error(`unknown bulk action ${String(unknown)}`);
    }
  }
}

/**
 * Runs, as the DLQ's replay did: the batch is one unit of work (RunsUnitOfWork.decide): lock the runs'
 * streams, read their rows under the locks, decide, one append of every run's events expecting the
 * revisions read, the rows written through.
 */
async function actOnRuns(
  server: RunServer,
  operation: BulkOperationRow,
  runIds: readonly string[],
  metadata: Readonly<Record<string, unknown>>,
): Promise<number> {
  const { action, team, filter, snapshot_at: snapshotAt } = operation;
  const decided = await server.decisions.unitOfWork(async (work) => {
    const { runs, now } = await lockAndLoadRuns(work.tx, runIds);
    const chosen = runs.filter((run) => runStillSelected(action, team, filter, snapshotAt, run));
    const command = runCommand(action, now);
    const decideOne = (run: PresentRun): RunEvent[] | null => decideOrSkip(() => decide(command, run));
    const [these] = await work.decide({ batches: [{ runs: chosen, decideOne, metadata }] });
    return these!;
  });
  return decided.length;
}

function runCommand(action: BulkAction, now: Date): RunCommand {
  switch (action) {
    case 'cancel-runs':
      return { type: 'CancelRun', now };
    case 'replay-dead':
      return { type: 'ReplayRun', now };
    case 'discard-dead':
      return { type: 'DiscardRun', now };
    case 'pause-jobs':
    case 'resume-jobs':
      throw new Error(`${action} is not a run command`);
    default: {
      const unknown: never = action;
      throw new Error(`unknown bulk action ${String(unknown)}`);
    }
  }
}

/**
 * Jobs, each as POST /v1/jobs/{name}:pause does it (its stream read, decided, appended with its expected
 * revision, its row written through; again on a revision conflict): jobs are few, and each is a stream
 * of its own. A job that changed team or queue meanwhile is left alone.
 */
async function actOnJobs(
  server: RunServer,
  operation: BulkOperationRow,
  names: readonly string[],
  metadata: Readonly<Record<string, unknown>>,
  now: Date,
): Promise<number> {
  const command: JobCommand =
    operation.action === 'pause-jobs' ? { type: 'PauseJob', now } : { type: 'ResumeJob', now };
  let acted = 0;
  for (const name of names) {
    try {
      const { events } = await executeStreamCommand<JobSnapshot, JobEvent>(server.eventStore, server.pool, {
        streamId: jobStreamId(name),
        fold: foldJob,
        revisionOf: (state) => state.revision,
        decide: (state) =>
          state.status === 'defined' && jobStillSelected(operation.team, operation.filter, state.definition)
            ? decideJob(command, state)
            : [],
        project: upsertJob,
        metadata,
      });
      if (events.length > 0) acted++;
    } catch (err) {
      // A job that went on changing through every retry is skipped, as one the decider turns down.
      if (!(err instanceof WrongExpectedRevisionError)) throw err;
    }
  }
  return acted;
}

/** A run the decider turns down (it is no longer waiting, no longer dead, already discarded) is skipped. */
function decideOrSkip(decision: () => RunEvent[]): RunEvent[] | null {
  try {
    return decision();
  } catch (err) {
    if (err instanceof DomainError) return null;
    throw err;
  }
}
