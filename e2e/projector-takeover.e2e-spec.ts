import { jobStreamId } from '@chronicle/domain';
import { verifyProjections, PROJECTIONS } from '@chronicle/projections';
import { createTestDatabase, testJob, waitFor, type TestDatabase } from '@chronicle/testing';
import { buildDist } from './support/build-dist';
import { exited, startRole, stopAll, type RoleProcess } from './support/role-process';

/**
 * Two projector processes (`npm run start:projector`, built) on one log: one is active (it holds the
 * projections' lock), the other waits. The active one is killed (SIGKILL) mid-stream; the other takes
 * over by itself and the read models end up equal to a fresh rebuild from the log: no event applied
 * twice, none skipped.
 */
const ACTIVE = 'projections active in this process';

describe('projector processes: one active, the other taking over when it dies', () => {
  let db: TestDatabase;
  const started: RoleProcess[] = [];

  beforeAll(async () => {
    await buildDist();
    db = await createTestDatabase();
  }, 120_000);
  afterAll(async () => {
    await stopAll(started);
    await db?.drop();
  });

  const start = async (): Promise<RoleProcess> => {
    const projector = await startRole('projector', db);
    started.push(projector);
    return projector;
  };

  /** Jobs defined in the log alone (no rows written through): only a projector makes their rows. */
  const defineInLog = async (names: readonly string[]): Promise<void> => {
    await db.eventStore.appendToStreams(
      names.map((name) => ({
        streamId: jobStreamId(name),
        expected: 'no_stream' as const,
        events: [
          { type: 'JobDefined', data: { definition: testJob({ name }), version: 1 }, metadata: { actor: 'test' } },
        ],
      })),
    );
  };
  const jobRows = async (): Promise<number> =>
    (await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs')).rows[0]!.n;

  it('takes over by itself within seconds, and the read models equal a rebuild', async () => {
    const first = await start();
    await waitFor(() => first.output().includes(ACTIVE), { description: 'the first projector active' });
    const second = await start();
    await defineInLog(Array.from({ length: 50 }, (_, i) => `early.job-${i}`));
    await waitFor(async () => (await jobRows()) === 50, { description: 'the active projector applying the log' });
    expect(second.output()).not.toContain(ACTIVE);

    // Killed while the log keeps growing: the other projector carries on where the checkpoints are.
    const writing = (async () => {
      for (let batch = 0; batch < 20; batch++)
        await defineInLog(Array.from({ length: 10 }, (_, i) => `late.job-${batch}-${i}`));
    })();
    first.child.kill('SIGKILL');
    const killedAt = Date.now();
    await writing;
    await waitFor(async () => (await jobRows()) === 250, {
      timeoutMs: 15_000,
      pollMs: 50,
      description: 'the second projector applying the rest of the log',
    });
    const takeoverMs = Date.now() - killedAt;
    expect(second.output()).toContain(ACTIVE);
    console.log(`projector takeover after SIGKILL: every event applied ${takeoverMs} ms after the kill`);

    const verified = await verifyProjections(db.eventStore, db.pool, PROJECTIONS);
    expect(verified.differences).toEqual([]);

    second.child.kill('SIGTERM');
    expect(await exited(second.child)).toBe(0);
  }, 90_000);

  it('takes over from a stopped one (SIGSTOP) after 10 s of silence; resumed, the first applies nothing twice', async () => {
    const rowsBefore = await jobRows();
    const first = await start();
    const second = await start();
    await waitFor(() => first.output().includes(ACTIVE) || second.output().includes(ACTIVE), {
      description: 'one projector active',
    });
    const [active, waiting] = first.output().includes(ACTIVE) ? [first, second] : [second, first];
    active.child.kill('SIGSTOP');
    const stoppedAt = Date.now();
    await defineInLog(Array.from({ length: 30 }, (_, i) => `paused.job-${i}`));
    await waitFor(async () => (await jobRows()) === rowsBefore + 30, {
      timeoutMs: 30_000,
      pollMs: 100,
      description: 'the waiting projector applying the log while the active one is stopped',
    });
    const takeoverMs = Date.now() - stoppedAt;
    expect(waiting.output()).toContain('the active projector was silent; its session ended, taking over');
    expect(takeoverMs).toBeGreaterThanOrEqual(9_000);
    console.log(`projector takeover after SIGSTOP: every event applied ${takeoverMs} ms after the stop`);

    // Resumed, the first finds its session gone, and waits; the log goes on being applied once.
    active.child.kill('SIGCONT');
    await waitFor(() => /lock was lost|retrying from the checkpoint/.test(active.output()), {
      timeoutMs: 15_000,
      description: 'the resumed projector finding its lock gone',
    });
    await defineInLog(Array.from({ length: 10 }, (_, i) => `resumed.job-${i}`));
    await waitFor(async () => (await jobRows()) === rowsBefore + 40, { description: 'the rest applied' });
    const verified = await verifyProjections(db.eventStore, db.pool, PROJECTIONS);
    expect(verified.differences).toEqual([]);
  }, 120_000);
});
