import { DEFAULT_PRIORITY_WEIGHTS, runStreamId, type TeamCaller, type WorkerCaller } from '@chronicle/domain';
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
import { TransitionRun, TransitionRunHandler } from '../runs/transition-run.command';
import { RunReservations } from '../unit-of-work/run-reservations';
import { claimReadyRuns } from '../workers/claim-ready-runs';
import { CompleteRuns } from '../workers/complete-runs.command';
import { ReadySignal } from '../workers/ready-signal';
import { ActOnDeadLetters, ActOnDeadLettersHandler, type DeadLettersProgress } from './act-on-dead-letters.command';

const job = testJob({ name: 'ops.dying', queue: 'ops', retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 } });
const team: TeamCaller = { kind: 'team', team: 'ops', queues: ['ops'], tokenId: 'tok_int' };
const worker: WorkerCaller = { kind: 'worker', team: 'ops', queues: ['ops'] };
const clock = { now: () => new Date() };

/** A bulk replay meets a run that someone discards between its batches: it skips it, never forces it. */
describe('dead letters in bulk, while they change', () => {
  let db: TestDatabase;
  const reservations = new RunReservations(createLogger('error'));
  const decisions = (): ReturnType<typeof runDecisions> => runDecisions(db.eventStore, db.pool, reservations);

  beforeAll(async () => {
    db = await createTestDatabase();
    const due = new Date(Date.now() - 1000);
    const runs = Array.from({ length: 150 }, (_, i) => ({
      job,
      runId: `run_${String(i).padStart(3, '0')}`,
      dueAt: due,
    }));
    await seedRuns(db.pool, db.eventStore, [job], runs);
    const complete = workerHandlers(db.eventStore, db.pool, reservations).complete;
    for (;;) {
      const { leases } = await decisions().unitOfWork((work) =>
        claimReadyRuns(
          work,
          worker,
          { queues: ['ops'], max: 100, leaseSeconds: 30, workerId: 'w' },
          DEFAULT_PRIORITY_WEIGHTS,
        ),
      );
      if (leases.length === 0) break;
      await complete.execute(
        new CompleteRuns(
          worker,
          leases.map((l) => ({
            runId: l.runId,
            fencingToken: l.fencingToken,
            outcome: 'failure' as const,
            error: 'boom',
            retryable: true,
          })),
        ),
      );
    }
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });

  it('skips the run discarded after the first batch, and replays every other one once', async () => {
    const handler = new ActOnDeadLettersHandler(
      clock,
      new ReadySignal(),
      runServers(db.eventStore, db.pool, decisions()),
    );
    const transitions = new TransitionRunHandler(
      clock,
      new ReadySignal(),
      runServers(db.eventStore, db.pool, decisions()),
    );
    const { rows } = await db.pool.query<{ run_id: string }>(
      "SELECT run_id FROM runs WHERE state = 'dead' ORDER BY dead_at, run_id",
    );
    expect(rows).toHaveLength(150);
    const later = rows[120]!.run_id; // in the second batch
    const progress: DeadLettersProgress[] = [];
    const done = await handler.execute(
      new ActOnDeadLetters(team, 'replay', {}, false, async (p) => {
        progress.push(p);
        // Between the batches, someone discards a run of the next one.
        if (progress.length === 1)
          await transitions.execute(new TransitionRun(team, later, (now) => ({ type: 'DiscardRun', now })));
      }),
    );
    expect(progress[0]).toEqual({ matched: 150, processed: 100, acted: 100, skipped: 0 });
    expect(done).toEqual({ matched: 150, processed: 150, acted: 149, skipped: 1 });
    const types = (await db.eventStore.readStream(runStreamId(later))).map((e) => e.type);
    expect(types).toContain('RunDiscarded');
    expect(types).not.toContain('RunReplayed');
    const replayed = await db.pool.query("SELECT count(*)::int AS n FROM runs WHERE state = 'scheduled'");
    expect(replayed.rows[0]).toEqual({ n: 149 });
  });
});
