import { runStreamId } from '@chronicle/domain';
import type { Queryable } from '@chronicle/platform';
import { waitFor } from '@chronicle/testing';
import { apiClient, type ApiClient } from './api-client';
import { rowsOnEvery } from './every-server';
import type { RunningApp } from './start-app';
import { createTeam } from './team-tokens';
import { mostOverBucket } from './token-bucket';

const ADMIN_TOKEN = 'e2e-admin-token-dispatch-0123456789';

interface Leases {
  leases: Array<{ runId: string; job: string; fencingToken: number }>;
}

/** Where the dispatch policy is tested: the app, and the databases its runs are kept in. */
export interface DispatchPolicySetup {
  readonly app: RunningApp;
  /** The databases of the runs' read models (the control database among them), each read by every query. */
  readonly readModels: readonly Queryable[];
  /** The databases of the runs' events, likewise. */
  readonly logs: readonly Queryable[];
  /** The server a job's runs are on, where there are several: each test's jobs are on servers of their own. */
  readonly serverOf?: (job: string) => string;
  close(): Promise<void>;
}

/**
 * Dispatch over HTTP: shared queues, platform workers, priorities, fairness across teams, per-job
 * concurrency; the same tests and tolerances wherever the runs are kept (`start`).
 */
export function dispatchPolicySuite(
  name: string,
  options: {
    /** How many bulk runs of one team flood the shared queue. */
    readonly flood: number;
    readonly start: (adminToken: string) => Promise<DispatchPolicySetup>;
  },
): void {
  describe(name, () => {
    let setup: DispatchPolicySetup;
    let app: RunningApp;
    let admin: ApiClient;
    let teamA: ApiClient;
    let teamB: ApiClient;
    let workerA: ApiClient;
    let platform: ApiClient;

    /** Defines a job, and waits for every database of runs to know it (their claims read its limit there). */
    const defineJob = async (
      team: ApiClient,
      name: string,
      queue: string,
      priority: string,
      extra: Record<string, unknown> = {},
    ): Promise<void> => {
      const response = await team.put(`/v1/jobs/${name}`, { queue, priority, ...extra });
      expect([200, 201]).toContain(response.status);
      await waitFor(
        async () =>
          (await rowsOnEvery(setup.readModels, 'SELECT 1 FROM jobs WHERE name = $1', [name])).length ===
          setup.readModels.length,
        { description: `${name} copied to every server` },
      );
    };
    /** Where there are several servers: each of these jobs' runs are on a server of their own. */
    const expectOnServersOfTheirOwn = (...jobs: string[]): void => {
      if (setup.serverOf !== undefined) expect(new Set(jobs.map(setup.serverOf)).size).toBe(jobs.length);
    };
    /** The sum of the counts `n` of `sql` over `databases`. */
    const countOnEvery = async (databases: readonly Queryable[], sql: string): Promise<number> =>
      (await rowsOnEvery<{ n: number }>(databases, sql)).reduce((sum, row) => sum + row.n, 0);
    /** `count` runs of a job due now, 1,000 per call. */
    const enqueue = async (
      team: ApiClient,
      job: string,
      count: number,
      extra: Record<string, unknown> = {},
    ): Promise<void> => {
      for (let done = 0; done < count; done += 1000) {
        const runs = Array.from({ length: Math.min(1000, count - done) }, () => ({ job, ...extra }));
        const response = await team.post('/v1/runs:batch', { runs });
        expect(response.status).toBe(200);
      }
    };
    const lease = async (worker: ApiClient, queue: string, max: number, waitSeconds = 0): Promise<Leases['leases']> => {
      const response = await worker.post<Leases>('/v1/lease', { queues: [queue], max, waitSeconds });
      expect(response.status).toBe(200);
      return response.body.leases;
    };
    const complete = (worker: ApiClient, run: { runId: string; fencingToken: number }): Promise<unknown> =>
      worker
        .post(`/v1/runs/${run.runId}/complete`, { fencingToken: run.fencingToken, outcome: 'success' })
        .then((r) => expect(r.status).toBe(200));

    beforeAll(async () => {
      setup = await options.start(ADMIN_TOKEN);
      ({ app } = setup);
      admin = apiClient(app.url, ADMIN_TOKEN);
      ({ team: teamA, worker: workerA } = await createTeam(app.url, ADMIN_TOKEN, 'team-a', ['shared', 'a-only']));
      ({ team: teamB } = await createTeam(app.url, ADMIN_TOKEN, 'team-b', ['shared']));
      const issued = await admin.post<{ token: string; team: null }>('/v1/tokens', {
        kind: 'worker',
        queues: ['shared', 'limited', 'weighted'],
      });
      expect(issued.status).toBe(201);
      expect(issued.body.team).toBeNull();
      platform = apiClient(app.url, issued.body.token);
    }, 120_000);
    afterAll(async () => {
      await setup?.close();
    });

    describe('shared queues', () => {
      it('lists the teams a queue serves: granted by their tokens, and by the admin with a weight', async () => {
        await admin.post('/v1/teams', { id: 'team-c' });
        const granted = await admin.post('/v1/queues/shared/grants', { team: 'team-c', weight: 2 });
        expect(granted.status).toBe(201);
        expect((await admin.post('/v1/queues/shared/grants', { team: 'team-c', weight: 3 })).status).toBe(200);
        expect((await admin.get('/v1/queues/shared/grants')).body).toEqual({
          queue: 'shared',
          grants: [
            { team: 'team-a', weight: 1 },
            { team: 'team-b', weight: 1 },
            { team: 'team-c', weight: 3 },
          ],
        });
      });

      it.each([
        ['an unknown team', () => admin.post('/v1/queues/shared/grants', { team: 'nobody' }), 404, 'not-found'],
        [
          'a weight of 0',
          () => admin.post('/v1/queues/shared/grants', { team: 'team-a', weight: 0 }),
          400,
          'validation-error',
        ],
        [
          'a weight of 101',
          () => admin.post('/v1/queues/shared/grants', { team: 'team-a', weight: 101 }),
          400,
          'validation-error',
        ],
        ['a bad queue name', () => admin.post('/v1/queues/a%2Fb/grants', { team: 'team-a' }), 400, 'validation-error'],
        ['a team token granting', () => teamA.post('/v1/queues/shared/grants', { team: 'team-a' }), 403, 'forbidden'],
        [
          'a team token issuing a platform token',
          () => teamA.post('/v1/tokens', { kind: 'worker', queues: ['shared'] }),
          403,
          'forbidden',
        ],
        [
          'a platform team token',
          () => admin.post('/v1/tokens', { kind: 'team', queues: ['shared'] }),
          400,
          'validation-error',
        ],
      ])('refuses %s', async (_, call, status, type) => {
        const response = await call();
        expect(response.status).toBe(status);
        expect(response.body).toMatchObject({ type: `/problems/${type}` });
      });

      it("leases every team's runs to a platform worker, and only its own team's to a team's worker", async () => {
        expectOnServersOfTheirOwn('a.share', 'b.share');
        await defineJob(teamA, 'a.share', 'shared', 'default');
        await defineJob(teamB, 'b.share', 'shared', 'default');
        await enqueue(teamA, 'a.share', 3);
        await enqueue(teamB, 'b.share', 3);
        const own = await lease(workerA, 'shared', 10);
        expect(own.map((l) => l.job)).toEqual(['a.share', 'a.share', 'a.share']);
        const all = await lease(platform, 'shared', 10);
        expect(all.map((l) => l.job)).toEqual(['b.share', 'b.share', 'b.share']);
        for (const run of [...own, ...all]) await complete(run.job === 'a.share' ? workerA : platform, run);
        // The platform worker is not granted a-only.
        expect((await platform.post('/v1/lease', { queues: ['a-only'], max: 1 })).status).toBe(403);
      });
    });

    describe(`with ${options.flood.toLocaleString('en-US')} bulk runs of one team ready`, () => {
      beforeAll(async () => {
        await defineJob(teamA, 'a.flood', 'shared', 'bulk');
        await enqueue(teamA, 'a.flood', options.flood);
      }, 300_000);

      it("leases another team's 10 runs within the first 3 batches of 10", async () => {
        expectOnServersOfTheirOwn('a.flood', 'b.few');
        await defineJob(teamB, 'b.few', 'shared', 'bulk');
        await enqueue(teamB, 'b.few', 10);
        const leased: string[] = [];
        for (let batch = 0; batch < 3; batch++) leased.push(...(await lease(platform, 'shared', 10)).map((l) => l.job));
        expect(leased.filter((job) => job === 'b.few')).toHaveLength(10);
      });

      it('leases a critical run in the next claim', async () => {
        expectOnServersOfTheirOwn('a.flood', 'b.urgent');
        await defineJob(teamB, 'b.urgent', 'shared', 'critical');
        await enqueue(teamB, 'b.urgent', 1);
        expect((await lease(platform, 'shared', 10)).map((l) => l.job)).toContain('b.urgent');
      });

      it('leases a critical run in the next runs a completion asks for', async () => {
        expectOnServersOfTheirOwn('a.flood', 'b.urgent');
        const [held] = await lease(platform, 'shared', 1);
        expect(held?.job).toBe('a.flood');
        await enqueue(teamB, 'b.urgent', 1);
        const answer = await platform.post<{ results: unknown[]; leases: Leases['leases'] }>('/v1/runs:complete', {
          completions: [{ runId: held!.runId, fencingToken: held!.fencingToken, outcome: 'success' }],
          lease: { queues: ['shared'], max: 10 },
        });
        expect(answer.status).toBe(200);
        expect(answer.body.leases.map((l) => l.job)).toContain('b.urgent');
      });

      it('splits 10,000 claims 70/25/5 across the priorities while all three have ready runs', async () => {
        expectOnServersOfTheirOwn('b.critical', 'b.default', 'a.flood');
        await defineJob(teamB, 'b.critical', 'shared', 'critical');
        await defineJob(teamB, 'b.default', 'shared', 'default');
        await enqueue(teamB, 'b.critical', 10_000);
        await enqueue(teamB, 'b.default', 10_000);
        const byJob = new Map<string, number>();
        for (let claims = 0; claims < 10_000;) {
          const leases = await lease(platform, 'shared', 100);
          claims += leases.length;
          for (const l of leases) byJob.set(l.job, (byJob.get(l.job) ?? 0) + 1);
        }
        const share = (jobs: string[]): number =>
          (100 * jobs.reduce((n, job) => n + (byJob.get(job) ?? 0), 0)) / 10_000;
        expect(Math.abs(share(['b.critical']) - 70)).toBeLessThanOrEqual(3);
        expect(Math.abs(share(['b.default']) - 25)).toBeLessThanOrEqual(3);
        expect(Math.abs(share(['a.flood', 'b.few']) - 5)).toBeLessThanOrEqual(3);
      }, 120_000);
    });

    it('gives a team of weight 2 twice the claims of a team of weight 1', async () => {
      expectOnServersOfTheirOwn('d.work', 'e.work');
      await admin.post('/v1/teams', { id: 'team-d' });
      const teamE = (await createTeam(app.url, ADMIN_TOKEN, 'team-e', ['weighted'])).team;
      const tokenD = await admin.post<{ token: string }>('/v1/teams/team-d/tokens', {
        kind: 'team',
        queues: ['weighted'],
      });
      await admin.post('/v1/queues/weighted/grants', { team: 'team-d', weight: 2 });
      const d = apiClient(app.url, tokenD.body.token);
      await defineJob(d, 'd.work', 'weighted', 'default');
      await defineJob(teamE, 'e.work', 'weighted', 'default');
      await enqueue(d, 'd.work', 600);
      await enqueue(teamE, 'e.work', 600);
      const leased: string[] = [];
      for (let batch = 0; batch < 10; batch++)
        leased.push(...(await lease(platform, 'weighted', 30)).map((l) => l.job));
      const ofD = leased.filter((job) => job === 'd.work').length;
      expect(ofD / leased.length).toBeGreaterThan(0.6);
      expect(ofD / leased.length).toBeLessThan(0.73);
    });

    describe('a queue cap', () => {
      it("never has more than its cap leased at once, over two teams' jobs (on servers of their own) and 10 lease loops", async () => {
        // Two jobs whose runs are on different servers, where there are several.
        const names = Array.from({ length: 20 }, (_, i) => `cap.job-${i}`);
        const first = names[0]!;
        const serverOf = setup.serverOf ?? ((name: string) => name);
        const second = names.find((n) => serverOf(n) !== serverOf(first))!;
        expectOnServersOfTheirOwn(first, second);
        const teams = [
          await createTeam(app.url, ADMIN_TOKEN, 'team-cap-1', ['capped']),
          await createTeam(app.url, ADMIN_TOKEN, 'team-cap-2', ['capped']),
        ];
        await defineJob(teams[0]!.team, first, 'capped', 'default');
        await defineJob(teams[1]!.team, second, 'capped', 'bulk');
        const capped = await admin.put<{ queue: string; concurrency: number }>('/v1/queues/capped/limits', {
          concurrency: 3,
        });
        expect([capped.status, capped.body]).toEqual([200, { queue: 'capped', concurrency: 3, rate: null }]);
        await enqueue(teams[0]!.team, first, 30);
        await enqueue(teams[1]!.team, second, 30);
        const issued = await admin.post<{ token: string }>('/v1/tokens', { kind: 'worker', queues: ['capped'] });
        const worker = apiClient(app.url, issued.body.token);
        let held = 0;
        let most = 0;
        let done = 0;
        const jobs = new Set<string>();
        // Each loop leases, works 5 ms under the leases and completes them; counted free before the completion
        // is sent, so what is counted is never more than is leased.
        const loops = Array.from({ length: 10 }, () =>
          waitFor(
            async () => {
              for (;;) {
                const leases = await lease(worker, 'capped', 2, 1);
                if (leases.length === 0) return done === 60;
                held += leases.length;
                most = Math.max(most, held);
                await new Promise((resolve) => setTimeout(resolve, 5)); // the work
                for (const run of leases) {
                  jobs.add(run.job);
                  held--;
                  await complete(worker, run);
                  done++;
                }
              }
            },
            { timeoutMs: 90_000, pollMs: 20, description: 'every run of the capped queue leased and completed' },
          ),
        );
        await Promise.all(loops);
        // Never past the cap; more than one at once (a cap, not one run at a time). Reaching exactly 3 is
        // likely, not certain: with the log apart, a completion's lease row goes a moment after its event.
        expect(most).toBeLessThanOrEqual(3);
        expect(most).toBeGreaterThan(1);
        expect([...jobs].sort()).toEqual([first, second].sort());
        // Without a cap again.
        expect((await admin.put('/v1/queues/capped/limits', { concurrency: null })).body).toEqual({
          queue: 'capped',
          concurrency: null,
          rate: null,
        });
        expect((await admin.get('/v1/queues/capped/limits')).body).toEqual({
          queue: 'capped',
          concurrency: null,
          rate: null,
        });
      }, 120_000);
    });

    describe('rates over the whole fleet', () => {
      // A queue's rate, set on its limits, and a team's, set on its quotas: each bucket spans every server.
      it.each([
        ['queue', (rate: unknown) => ['/v1/queues/rated-queue/limits', { rate }] as const],
        ['team', (rate: unknown) => ['/v1/teams/team-rate-2/quotas', { leaseRate: rate }] as const],
      ])(
        "never leases faster than a %s's rate, over two jobs (on servers of their own) and 6 lease loops",
        async (kind, limitsOf) => {
          const queue = `rated-${kind}`;
          const names = Array.from({ length: 20 }, (_, i) => `rate-${kind}.job-${i}`);
          const first = names[0]!;
          const serverOf = setup.serverOf ?? ((name: string) => name);
          const second = names.find((n) => serverOf(n) !== serverOf(first))!;
          expectOnServersOfTheirOwn(first, second);
          // The queue's case: two teams' jobs; the team's: two jobs of the one team, which has the rate.
          const teams =
            kind === 'queue'
              ? [
                  await createTeam(app.url, ADMIN_TOKEN, 'team-rate-1', [queue]),
                  await createTeam(app.url, ADMIN_TOKEN, 'team-rate-3', [queue]),
                ]
              : [await createTeam(app.url, ADMIN_TOKEN, 'team-rate-2', [queue])];
          await defineJob(teams[0]!.team, first, queue, 'default');
          await defineJob(teams[teams.length - 1]!.team, second, queue, 'default');
          const rate = { limit: 5, per: 'second', burst: 2 };
          const [path, body] = limitsOf(rate);
          const field = kind === 'queue' ? 'rate' : 'leaseRate';
          const set = await admin.put<Record<string, unknown>>(path, body);
          expect([set.status, set.body[field]]).toEqual([200, rate]);
          await enqueue(teams[0]!.team, first, 8);
          await enqueue(teams[teams.length - 1]!.team, second, 7);
          const issued = await admin.post<{ token: string }>('/v1/tokens', { kind: 'worker', queues: [queue] });
          const worker = apiClient(app.url, issued.body.token);
          const leased: string[] = [];
          const loops = Array.from({ length: 6 }, () =>
            waitFor(
              async () => {
                for (;;) {
                  const leases = await lease(worker, queue, 2, 1);
                  if (leases.length === 0) return leased.length === 15;
                  for (const run of leases) {
                    leased.push(run.runId);
                    await complete(worker, run);
                  }
                }
              },
              { timeoutMs: 60_000, pollMs: 20, description: `every run of the ${kind}'s rate leased and completed` },
            ),
          );
          await Promise.all(loops);
          // When each was leased, by its server's clock (RunLeased): together, never faster than the bucket.
          const times = await Promise.all(
            leased.map(async (id) => {
              const events = await admin.get<{ events: Array<{ type: string; data: { leasedAt?: string } }> }>(
                `/v1/runs/${id}/events`,
              );
              return Date.parse(events.body.events.find((e) => e.type === 'RunLeased')!.data.leasedAt!);
            }),
          );
          expect(mostOverBucket(times, 5, 2)).toBeLessThanOrEqual(0);
          const [, none] = limitsOf(null);
          expect((await admin.put<Record<string, unknown>>(path, none)).body[field]).toBeNull();
        },
        90_000,
      );
    });

    describe('per-job concurrency', () => {
      beforeAll(async () => {
        expectOnServersOfTheirOwn('l.two-at-a-time', 'l.free');
        const limited = await createTeam(app.url, ADMIN_TOKEN, 'team-l', ['limited']);
        await defineJob(limited.team, 'l.two-at-a-time', 'limited', 'default', { concurrency: 2 });
        await defineJob(limited.team, 'l.free', 'limited', 'default');
        // Both due already, the other job's runs after all of the limited job's: they must not wait behind them.
        const now = Date.now();
        await enqueue(limited.team, 'l.two-at-a-time', 200, { runAt: new Date(now - 2000).toISOString() });
        await enqueue(limited.team, 'l.free', 50, { runAt: new Date(now - 1000).toISOString() });
      });

      it('lets the runs of other jobs past a job at its limit', async () => {
        const first = await lease(platform, 'limited', 20);
        expect(first.filter((l) => l.job === 'l.two-at-a-time')).toHaveLength(2);
        expect(first.filter((l) => l.job === 'l.free')).toHaveLength(18);
        for (const run of first) await complete(platform, run);
      });

      it('refuses an enqueue with ifRunning: reject while the job is at its limit, and enqueues nothing', async () => {
        const team = (await createTeam(app.url, ADMIN_TOKEN, 'team-r', ['limited'])).team;
        await defineJob(team, 'r.single', 'limited', 'critical', { concurrency: 1 });
        expect((await team.post('/v1/jobs/r.single/runs', { ifRunning: 'reject' })).status).toBe(201);
        const leases = await lease(platform, 'limited', 10);
        const leased = leases.find((l) => l.job === 'r.single');
        expect(leased).toBeDefined();
        const refused = await team.post('/v1/jobs/r.single/runs', { ifRunning: 'reject' });
        expect(refused.status).toBe(409);
        expect(refused.body).toMatchObject({
          type: '/problems/concurrency-limit',
          detail: expect.stringContaining('1 of its 1 runs leased'),
        });
        expect((await team.post('/v1/runs:batch', { runs: [{ job: 'r.single', ifRunning: 'reject' }] })).status).toBe(
          409,
        );
        expect((await team.post('/v1/jobs/r.single/runs', { ifRunning: 'sometimes' })).status).toBe(400);
        const scheduled = await countOnEvery(
          setup.logs,
          "SELECT count(*)::int AS n FROM events WHERE event_type = 'RunScheduled' AND data->>'job' = 'r.single'",
        );
        expect(scheduled).toBe(1);
        // Queued (the default), the run waits for the running one.
        expect((await team.post('/v1/jobs/r.single/runs', {})).status).toBe(201);
        for (const run of leases) await complete(platform, run);
      });

      it('lets exactly one of two concurrent ifRunning: reject enqueues through: the other would have to wait', async () => {
        const team = (await createTeam(app.url, ADMIN_TOKEN, 'team-rr', ['limited'])).team;
        await defineJob(team, 'rr.once', 'limited', 'critical', { concurrency: 1 });
        const answers = await Promise.all(
          Array.from({ length: 2 }, () => team.post('/v1/jobs/rr.once/runs', { ifRunning: 'reject' })),
        );
        expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
        expect(answers.find((a) => a.status === 409)?.body).toMatchObject({
          type: '/problems/concurrency-limit',
          detail: expect.stringContaining('0 of its 1 runs leased and 1 ready'),
        });
        const scheduled = await countOnEvery(
          setup.logs,
          "SELECT count(*)::int AS n FROM events WHERE event_type = 'RunScheduled' AND data->>'job' = 'rr.once'",
        );
        expect(scheduled).toBe(1);
        for (const run of await lease(platform, 'limited', 10)) await complete(platform, run);
      });

      it('never has more than 2 leased at once with 20 concurrent lease loops, by the event log', async () => {
        let unfinished = await countOnEvery(
          setup.readModels,
          "SELECT count(*)::int AS n FROM runs WHERE job = 'l.two-at-a-time' AND state <> 'succeeded'",
        );
        // Each loop leases, works 5 ms under the leases and completes them, again and again; finding nothing to
        // lease (the other loops hold the job's 2 places), it long-polls as a worker does (up to a second), and
        // looks again 20 ms later, until every run of the limited job has succeeded. Without the long poll, 18
        // idle loops asking every 20 ms made some 900 claims a second over the three servers, and on a slow
        // machine the two loops holding the places waited behind them past the deadline.
        const loops = Array.from({ length: 20 }, () =>
          waitFor(
            async () => {
              for (;;) {
                const leases = await lease(platform, 'limited', 5, 1);
                if (leases.length === 0) return unfinished === 0;
                await new Promise((resolve) => setTimeout(resolve, 5)); // the work
                for (const run of leases) {
                  await complete(platform, run);
                  if (run.job === 'l.two-at-a-time') unfinished--;
                }
              }
            },
            { timeoutMs: 90_000, pollMs: 20, description: 'every run of l.two-at-a-time leased and completed' },
          ),
        );
        await Promise.all(loops);
        // The runs from the read models, their events from the logs (which may live in other databases): the
        // job's runs and events are all in one of them, its server's, in the order of that log.
        const runs = await rowsOnEvery<{ run_id: string }>(
          setup.readModels,
          "SELECT run_id FROM runs WHERE job = 'l.two-at-a-time'",
        );
        const rows = await rowsOnEvery<{ stream_id: string; event_type: string }>(
          setup.logs,
          `SELECT es_stream_name(stream_key) AS stream_id, event_type FROM events
            WHERE event_type IN ('RunLeased', 'RunSucceeded') AND es_stream_name(stream_key) = ANY($1::text[])
            ORDER BY transaction_id, global_position`,
          [runs.map((r) => runStreamId(r.run_id))],
        );
        let leased = 0;
        let most = 0;
        for (const event of rows) {
          leased += event.event_type === 'RunLeased' ? 1 : -1;
          most = Math.max(most, leased);
        }
        expect(rows.filter((e) => e.event_type === 'RunSucceeded')).toHaveLength(200);
        expect(most).toBe(2);
      }, 120_000);
    });
  });
}
