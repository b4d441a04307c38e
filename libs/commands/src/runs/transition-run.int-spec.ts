import {
  DEFAULT_PRIORITY_WEIGHTS,
  DomainError,
  runStreamId,
  type RunCommand,
  type TeamCaller,
  type WorkerCaller,
} from '@chronicle/domain';
import { PostgresEventStore } from '@chronicle/event-store';
import { createLogger } from '@chronicle/platform';
import {
  createTestDatabase,
  runDecisions,
  runServers,
  seedRuns,
  testJob,
  workerHandlers,
  type TestDatabase,
} from '@chronicle/testing';
import { RunReservations } from '../unit-of-work/run-reservations';
import { claimReadyRuns } from '../workers/claim-ready-runs';
import { CompleteRuns } from '../workers/complete-runs.command';
import { ReadySignal } from '../workers/ready-signal';
import { TransitionRun, TransitionRunHandler } from './transition-run.command';

const waiting = testJob({ name: 'ops.waiting' });
const dying = testJob({
  name: 'ops.dying',
  queue: 'ops-dying',
  retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 },
});
const foreign = testJob({ name: 'growth.theirs', team: 'growth', queue: 'growth' });
const team: TeamCaller = { kind: 'team', team: 'ops', queues: ['ops', 'ops-dying'] };
const worker: WorkerCaller = { kind: 'worker', team: 'ops', queues: ['ops-dying'] };
const cancelRun = (now: Date): RunCommand => ({ type: 'CancelRun', now });

/**
 * A team's cancel, replay and discard go the way of claims and completions:
 * the run's lock, its row from the read model, the decider, one append
 * expecting the row's revision, the row written through. With the log in a
 * database of its own, a row can lag its stream: the decision from the row
 * is refused by the append, as a conflict, and writes nothing.
 */
describe("a team's transitions of a run, decided from the runs read model", () => {
  let log: TestDatabase;
  let readModels: TestDatabase;
  let store: PostgresEventStore;
  let transitions: TransitionRunHandler;
  const reservations = new RunReservations(createLogger('error'));
  const transition = (runId: string, command: (now: Date) => RunCommand, caller: TeamCaller = team) =>
    transitions.execute(new TransitionRun(caller, runId, command));
  const eventTypes = async (runId: string): Promise<string[]> =>
    (await store.readStream(runStreamId(runId))).map((e) => e.type);
  const row = async (runId: string): Promise<unknown> =>
    (await readModels.pool.query('SELECT state, revision, discarded FROM runs WHERE run_id = $1', [runId])).rows[0];

  beforeAll(async () => {
    [log, readModels] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    store = new PostgresEventStore(log.pool);
    transitions = new TransitionRunHandler(
      { now: () => new Date() },
      new ReadySignal(),
      runServers(store, readModels.pool, runDecisions(store, readModels.pool, reservations)),
    );
    const due = new Date(Date.now() - 1000);
    await seedRuns(
      readModels.pool,
      store,
      [waiting, dying, foreign],
      [
        ...['run_cancel', 'run_lagging'].map((runId) => ({ job: waiting, runId, dueAt: due })),
        ...['run_replay', 'run_discard'].map((runId) => ({ job: dying, runId, dueAt: due })),
        { job: foreign, runId: 'run_foreign', dueAt: due },
      ],
    );
    // Two dead runs: leased, then failed with their one attempt spent.
    const { leases } = await runDecisions(store, readModels.pool, reservations).unitOfWork((work) =>
      claimReadyRuns(
        work,
        worker,
        { queues: ['ops-dying'], max: 2, leaseSeconds: 30, workerId: 'w' },
        DEFAULT_PRIORITY_WEIGHTS,
      ),
    );
    const failures = leases.map((l) => ({
      runId: l.runId,
      fencingToken: l.fencingToken,
      outcome: 'failure' as const,
      error: 'boom',
      retryable: true,
    }));
    const { results } = await workerHandlers(store, readModels.pool, reservations).complete.execute(
      new CompleteRuns(worker, failures),
    );
    expect(results.map((r) => ('state' in r ? r.state : r.refused.code)).sort()).toEqual(['dead', 'dead']);
  });
  afterAll(async () => {
    await Promise.all([log?.drop(), readModels?.drop()]);
  });

  it('cancels a waiting run at the revision its row shows, writes the row through, and refuses a second cancel', async () => {
    expect(await transition('run_cancel', cancelRun)).toMatchObject({ status: 'cancelled', revision: 1 });
    expect(await eventTypes('run_cancel')).toEqual(['RunScheduled', 'RunCancelled']);
    expect(await row('run_cancel')).toEqual({ state: 'cancelled', revision: '1', discarded: false });

    // The decider's refusal is the answer, as before: 409 invalid-transition, nothing appended.
    await expect(transition('run_cancel', cancelRun)).rejects.toMatchObject({ code: 'invalid-transition' });
    expect(await eventTypes('run_cancel')).toEqual(['RunScheduled', 'RunCancelled']);
  });

  it('replays a dead run and discards another, each from its row', async () => {
    expect(await transition('run_replay', (now) => ({ type: 'ReplayRun', now }))).toMatchObject({
      status: 'scheduled',
      attemptLimit: 2,
    });
    expect(await eventTypes('run_replay')).toEqual([
      'RunScheduled',
      'RunLeased',
      'RunFailed',
      'RunDead',
      'RunReplayed',
    ]);
    expect(await row('run_replay')).toEqual({ state: 'scheduled', revision: '4', discarded: false });

    expect(await transition('run_discard', (now) => ({ type: 'DiscardRun', now }))).toMatchObject({
      status: 'dead',
      discarded: true,
    });
    expect(await row('run_discard')).toEqual({ state: 'dead', revision: '4', discarded: true });
    await expect(transition('run_discard', (now) => ({ type: 'ReplayRun', now }))).rejects.toMatchObject({
      code: 'invalid-transition',
    });
  });

  it("reads another team's run and an unknown one as not found, and writes nothing", async () => {
    for (const runId of ['run_foreign', 'run_unknown']) {
      const refusal = await transition(runId, cancelRun).catch((err: unknown) => err);
      expect(refusal).toBeInstanceOf(DomainError);
      expect(refusal).toMatchObject({ code: 'not-found', message: `run ${runId} not found` });
    }
    expect(await eventTypes('run_foreign')).toEqual(['RunScheduled']);
    expect(await eventTypes('run_unknown')).toEqual([]);
  });

  it('refuses, as a conflict, a cancel decided from a row behind its stream, and writes nothing', async () => {
    // The log moves on without the row: a lease whose write-through was lost. Decided from the log the
    // cancel would be refused as invalid-transition (a leased run); decided from the row (ready), the
    // append expecting revision 0 refuses it.
    const at = new Date();
    await store.appendToStream(runStreamId('run_lagging'), 0n, [
      {
        type: 'RunLeased',
        data: {
          attempt: 1,
          fencingToken: 1,
          workerId: 'w',
          leasedAt: at.toISOString(),
          leaseExpiresAt: new Date(at.getTime() + 60_000).toISOString(),
        },
      },
    ]);
    const refusal = await transition('run_lagging', cancelRun).catch((err: unknown) => err);
    expect(refusal).toBeInstanceOf(DomainError);
    expect(refusal).toMatchObject({ code: 'conflict' });
    expect(await eventTypes('run_lagging')).toEqual(['RunScheduled', 'RunLeased']);
    expect(await row('run_lagging')).toEqual({ state: 'scheduled', revision: '0', discarded: false });
  });
});
