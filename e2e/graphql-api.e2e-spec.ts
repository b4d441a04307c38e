import { ApiModule } from '@chronicle/api';
import { jobStreamId } from '@chronicle/domain';
import { createTestDatabase, waitFor, type TestDatabase } from '@chronicle/testing';
import {
  createTeam,
  graphqlClient,
  startApp,
  type ApiClient,
  type GraphqlClient,
  type RunningApp,
  type TeamClients,
} from './support';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';

interface RunEventView {
  type: string;
  revision: number;
  actor: string | null;
  recordedAt: string;
  data: Record<string, unknown>;
}
interface RunView {
  id: string;
  job: string;
  team: string;
  state: string;
  attempt: number;
  lastError: string | null;
  events: RunEventView[];
}
interface Connection<T> {
  edges: Array<{ cursor: string; node: T }>;
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

const RUN_FIELDS = 'id job team state attempt lastError events { type revision actor recordedAt data }';

describe('GraphQL at POST /graphql', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let billing: TeamClients;
  let growth: TeamClients;
  let gql: GraphqlClient; // billing's team token
  let growthGql: GraphqlClient;
  let adminGql: GraphqlClient;
  let workerGql: GraphqlClient;
  /** SQL statements the app sent to the database (reads and writes, log included). */
  let statements = 0;

  beforeAll(async () => {
    db = await createTestDatabase();
    for (const pool of new Set([db.pool, db.log])) {
      const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
      pool.query = ((...args: unknown[]) => {
        statements += 1;
        return query(...args);
      }) as typeof pool.query;
    }
    // No canary worker: its polls would count among the statements of the requests measured here.
    app = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN, undefined, { CANARIES: 'off' });
    billing = await createTeam(app.url, ADMIN_TOKEN, 'billing', ['billing']);
    growth = await createTeam(app.url, ADMIN_TOKEN, 'growth', ['growth']);
    gql = graphqlClient(app.url, billing.teamToken);
    growthGql = graphqlClient(app.url, growth.teamToken);
    adminGql = graphqlClient(app.url, ADMIN_TOKEN);
    workerGql = graphqlClient(app.url, billing.workerToken);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  const defineJob = async (
    client: GraphqlClient,
    name: string,
    definition: Record<string, unknown>,
  ): Promise<{ name: string; version: number; team: string }> => {
    const answer = await client<{ defineJob: { name: string; version: number; team: string } }>(
      'mutation ($name: String!, $definition: JSON!) { defineJob(name: $name, definition: $definition) { name version team } }',
      { name, definition },
    );
    expect(answer.errors).toBeUndefined();
    return answer.data!.defineJob;
  };
  const enqueue = async (client: GraphqlClient, job: string, extra = ''): Promise<RunView> => {
    const answer = await client<{ enqueueRun: RunView }>(
      `mutation { enqueueRun(job: ${JSON.stringify(job)}${extra}) { ${RUN_FIELDS} } }`,
    );
    expect(answer.errors).toBeUndefined();
    return answer.data!.enqueueRun;
  };
  /** The worker leases the queue's runs and fails each once: with one attempt, they die. */
  const leaseAndFail = async (worker: ApiClient, queue: string, count: number): Promise<void> => {
    const leases: Array<{ runId: string; fencingToken: number }> = [];
    await waitFor(
      async () => {
        const { body } = await worker.post<{ leases: typeof leases }>('/v1/lease', { queues: [queue], max: count });
        leases.push(...body.leases);
        return leases.length >= count;
      },
      { timeoutMs: 10_000, description: `${count} leases on ${queue}` },
    );
    for (const { runId, fencingToken } of leases) {
      const completed = await worker.post(`/v1/runs/${runId}/complete`, {
        fencingToken,
        outcome: 'failure',
        error: 'boom',
      });
      expect(completed.status).toBe(200);
    }
  };

  describe('who may ask', () => {
    it('answers 401 with code unauthorized without a token or with an unknown one', async () => {
      for (const client of [graphqlClient(app.url), graphqlClient(app.url, 'sch_team_not-a-real-token')]) {
        const answer = await client('{ jobs { edges { cursor } } }');
        expect(answer.status).toBe(401);
        expect(answer.data).toBeUndefined();
        expect(answer.errors).toEqual([
          { message: expect.any(String), extensions: { code: 'unauthorized', status: 401 } },
        ]);
      }
    });

    it('keeps each team to its own jobs and runs, as REST does, and lets the admin see all', async () => {
      await defineJob(gql, 'billing.secret', { queue: 'billing' });
      const run = await enqueue(gql, 'billing.secret');

      const job = await growthGql<{ job: unknown }>('{ job(name: "billing.secret") { name } }');
      expect(job.data).toEqual({ job: null });
      expect(job.errors?.[0]).toMatchObject({ path: ['job'], extensions: { code: 'not-found', status: 404 } });
      const other = await growthGql<{ run: unknown }>(`{ run(id: "${run.id}") { id } }`);
      expect(other.errors?.[0]?.extensions).toEqual({ code: 'not-found', status: 404 });
      expect((await growth.team.get('/v1/jobs/billing.secret')).status).toBe(404);
      expect((await growth.team.get(`/v1/runs/${run.id}`)).status).toBe(404);

      const lists = await growthGql<{ jobs: Connection<unknown>; runs: Connection<unknown> }>(
        '{ jobs { edges { cursor } } runs { edges { cursor } } }',
      );
      expect(lists.data).toEqual({ jobs: { edges: [] }, runs: { edges: [] } });
      const asked = await growthGql('{ jobs(team: "billing") { edges { cursor } } }');
      expect(asked.errors?.[0]?.extensions).toEqual({ code: 'forbidden', status: 403 });
      const cancel = await growthGql(`mutation { cancelRun(id: "${run.id}") { id } }`);
      expect(cancel.errors?.[0]?.extensions).toEqual({ code: 'not-found', status: 404 });

      const admin = await adminGql<{ job: { team: string }; run: { team: string } }>(
        `{ job(name: "billing.secret") { team } run(id: "${run.id}") { team } }`,
      );
      expect(admin.data).toEqual({ job: { team: 'billing' }, run: { team: 'billing' } });
      const adminRuns = await adminGql<{ runs: Connection<{ id: string }> }>(
        '{ runs(first: 500) { edges { node { id } } } }',
      );
      expect(adminRuns.data!.runs.edges.map((e) => e.node.id)).toContain(run.id);
      // An argument given as null is not given: the team's own jobs, the admin's all.
      const nulls =
        '{ jobs(team: null, queue: null) { edges { node { name } } } runs(filter: { team: null, job: null }) { edges { node { id } } } }';
      const teamNulls = await gql<{ jobs: Connection<{ name: string }>; runs: Connection<{ id: string }> }>(nulls);
      expect(teamNulls.errors).toBeUndefined();
      expect(teamNulls.data!.jobs.edges.map((e) => e.node.name)).toContain('billing.secret');
      expect(teamNulls.data!.runs.edges.map((e) => e.node.id)).toContain(run.id);
      const adminNulls = await adminGql<{ jobs: Connection<{ name: string }> }>(nulls);
      expect(adminNulls.data!.jobs.edges.map((e) => e.node.name)).toContain('billing.secret');
      // The admin reads but does not act for a team, as over REST.
      const adminEnqueue = await adminGql('mutation { enqueueRun(job: "billing.secret") { id } }');
      expect(adminEnqueue.errors?.[0]?.extensions).toEqual({ code: 'forbidden', status: 403 });
    });

    it('gives a worker token nothing REST does not: no listings, no mutations, only its runs', async () => {
      for (const query of [
        '{ jobs { edges { cursor } } }',
        '{ runs { edges { cursor } } }',
        '{ deadLetters { edges { cursor } } }',
        '{ queues { queue } }',
        '{ job(name: "billing.secret") { name } }',
        'mutation { defineJob(name: "billing.w", definition: {queue: "billing"}) { name } }',
        'mutation { enqueueRun(job: "billing.secret") { id } }',
      ]) {
        const answer = await workerGql(query);
        expect(answer.errors?.map((e) => e.extensions)).toEqual([{ code: 'forbidden', status: 403 }]);
      }
      expect((await billing.worker.get('/v1/jobs')).status).toBe(403);
      // GET /v1/runs/{id} answers a worker for a run of its queues: run(id:) does too.
      const run = await enqueue(gql, 'billing.secret');
      expect((await workerGql<{ run: { id: string } }>(`{ run(id: "${run.id}") { id } }`)).data).toEqual({
        run: { id: run.id },
      });
    });
  });

  describe('mutations: the commands REST sends, so the same events with the same actor', () => {
    it('defines, pauses and resumes a job, each an event of its stream with the team as actor', async () => {
      const created = await defineJob(gql, 'billing.export', {
        queue: 'billing',
        priority: 'critical',
        retry: { maxAttempts: 5, baseSeconds: 30, maxSeconds: 1800 },
        schedule: { cron: '0 2 * * *', timeZone: 'Europe/Berlin', jitterSeconds: 0 },
      });
      expect(created).toEqual({ name: 'billing.export', version: 1, team: 'billing' });
      const paused = await gql<{ pauseJob: { paused: boolean } }>(
        'mutation { pauseJob(name: "billing.export") { paused } }',
      );
      expect(paused.data).toEqual({ pauseJob: { paused: true } });
      const resumed = await gql<{ resumeJob: { paused: boolean } }>(
        'mutation { resumeJob(name: "billing.export") { paused } }',
      );
      expect(resumed.data).toEqual({ resumeJob: { paused: false } });
      const events = await db.eventStore.readStream(jobStreamId('billing.export'));
      expect(events.map((e) => [e.type, e.metadata['actor']])).toEqual([
        ['JobDefined', billing.teamActor],
        ['JobPaused', billing.teamActor],
        ['JobResumed', billing.teamActor],
      ]);
      // REST reads the same job.
      expect((await billing.team.get('/v1/jobs/billing.export')).body).toMatchObject({ version: 1, paused: false });

      const job = await gql<{ job: { nextFireTimes: string[]; definition: { priority: string } } }>(
        '{ job(name: "billing.export") { nextFireTimes(count: 3) definition } }',
      );
      const rest = await billing.team.get<{ fireTimes: string[] }>('/v1/jobs/billing.export/preview?count=3');
      expect(job.data!.job.nextFireTimes.map((t) => Date.parse(t))).toEqual(
        rest.body.fireTimes.map((t) => Date.parse(t)),
      );
      expect(job.data!.job.definition.priority).toBe('critical');
    });

    it('enqueues and cancels a run: RunScheduled and RunCancelled by the team, read from the log', async () => {
      await defineJob(gql, 'billing.later', { queue: 'billing' });
      const run = await enqueue(
        gql,
        'billing.later',
        ', delaySeconds: 3600, payload: {month: "2026-03"}, idempotencyKey: "march"',
      );
      expect(run).toMatchObject({ job: 'billing.later', team: 'billing', state: 'scheduled' });
      expect((await enqueue(gql, 'billing.later', ', delaySeconds: 3600, idempotencyKey: "march"')).id).toBe(run.id);

      const cancelled = await gql<{ cancelRun: RunView }>(`mutation { cancelRun(id: "${run.id}") { ${RUN_FIELDS} } }`);
      expect(cancelled.data!.cancelRun.state).toBe('cancelled');
      expect(cancelled.data!.cancelRun.events.map((e) => [e.type, e.revision, e.actor])).toEqual([
        ['RunScheduled', 0, billing.teamActor],
        ['RunCancelled', 1, billing.teamActor],
      ]);
      const rest = await billing.team.get<{ events: Array<{ type: string; metadata: { actor: string } }> }>(
        `/v1/runs/${run.id}/events`,
      );
      expect(rest.body.events.map((e) => [e.type, e.metadata.actor])).toEqual([
        ['RunScheduled', billing.teamActor],
        ['RunCancelled', billing.teamActor],
      ]);
      const again = await gql(`mutation { cancelRun(id: "${run.id}") { id } }`);
      expect(again.errors?.[0]?.extensions).toEqual({ code: 'invalid-transition', status: 409 });
    });

    it('replays and discards dead letters, each event with its actor, and the list follows', async () => {
      const b2 = await createTeam(app.url, ADMIN_TOKEN, 'ledger', ['ledger']);
      const ledger = graphqlClient(app.url, b2.teamToken);
      await defineJob(ledger, 'ledger.close', {
        queue: 'ledger',
        retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 },
      });
      const first = await enqueue(ledger, 'ledger.close');
      const second = await enqueue(ledger, 'ledger.close');
      await leaseAndFail(b2.worker, 'ledger', 2);

      const dead = await ledger<{ deadLetters: Connection<RunView> }>(
        `{ deadLetters(job: "ledger.close") { edges { cursor node { ${RUN_FIELDS} } } pageInfo { hasNextPage endCursor } } }`,
      );
      const listed = dead.data!.deadLetters;
      expect(listed.edges.map((e) => e.node.id).sort()).toEqual([first.id, second.id].sort());
      expect(listed.edges[0]!.node).toMatchObject({ state: 'dead', lastError: 'boom' });
      expect(listed.pageInfo).toEqual({ hasNextPage: false, endCursor: listed.edges[1]!.cursor });
      expect(listed.edges[0]!.node.events.map((e) => [e.type, e.actor])).toEqual([
        ['RunScheduled', b2.teamActor],
        ['RunLeased', 'worker:ledger:anonymous'], // no workerId given: the lease names none
        ['RunFailed', 'worker:ledger:anonymous'],
        ['RunDead', 'worker:ledger:anonymous'],
      ]);

      const replayed = await ledger<{ replayDeadLetter: RunView }>(
        `mutation { replayDeadLetter(id: "${first.id}") { ${RUN_FIELDS} } }`,
      );
      expect(replayed.data!.replayDeadLetter.state).toBe('ready');
      expect(replayed.data!.replayDeadLetter.events.at(-1)).toMatchObject({
        type: 'RunReplayed',
        actor: b2.teamActor,
      });
      const discarded = await ledger<{ discardDeadLetter: RunView }>(
        `mutation { discardDeadLetter(id: "${second.id}") { ${RUN_FIELDS} } }`,
      );
      expect(discarded.data!.discardDeadLetter.events.at(-1)).toMatchObject({
        type: 'RunDiscarded',
        actor: b2.teamActor,
      });
      const after = await ledger<{ deadLetters: Connection<unknown> }>('{ deadLetters { edges { cursor } } }');
      expect(after.data!.deadLetters.edges).toEqual([]);
      expect((await b2.team.get<{ items: unknown[] }>('/v1/dlq')).body.items).toEqual([]);
      const replayAgain = await ledger(`mutation { replayDeadLetter(id: "${first.id}") { id } }`);
      expect(replayAgain.errors?.[0]?.extensions).toEqual({ code: 'invalid-transition', status: 409 });
    });
  });

  describe('queries', () => {
    it("counts each queue's runs by priority, the team's own", async () => {
      const team = await createTeam(app.url, ADMIN_TOKEN, 'stats', ['stats']);
      const stats = graphqlClient(app.url, team.teamToken);
      await defineJob(stats, 'stats.now', { queue: 'stats', priority: 'critical' });
      await defineJob(stats, 'stats.bulk', { queue: 'stats', priority: 'bulk' });
      for (let i = 0; i < 3; i++) await enqueue(stats, 'stats.now');
      await enqueue(stats, 'stats.bulk', ', delaySeconds: 600');
      const { body } = await team.worker.post<{ leases: unknown[] }>('/v1/lease', { queues: ['stats'], max: 1 });
      expect(body.leases).toHaveLength(1);
      const answer = await stats<{ queues: Array<Record<string, unknown>> }>(
        '{ queues { queue priority ready leased retryWait dead oldestReadyAgeSeconds } }',
      );
      expect(answer.data!.queues).toEqual([
        expect.objectContaining({ queue: 'stats', priority: 'critical', ready: 2, leased: 1, retryWait: 0, dead: 0 }),
        {
          queue: 'stats',
          priority: 'default',
          ready: 0,
          leased: 0,
          retryWait: 0,
          dead: 0,
          oldestReadyAgeSeconds: null,
        },
        { queue: 'stats', priority: 'bulk', ready: 0, leased: 0, retryWait: 0, dead: 0, oldestReadyAgeSeconds: null },
      ]);
      expect(answer.data!.queues[0]!['oldestReadyAgeSeconds']).toBeGreaterThanOrEqual(0);
      const admin = await adminGql<{ queues: Array<{ queue: string }> }>('{ queues { queue } }');
      expect(new Set(admin.data!.queues.map((q) => q.queue))).toEqual(
        new Set(['billing', 'growth', 'ledger', 'stats']),
      );
    });

    it('previews a schedule, and refuses a bad one with code invalid-schedule', async () => {
      const answer = await gql<{ schedulePreview: string[] }>(
        '{ schedulePreview(schedule: {cron: "30 2 * * *", timeZone: "Europe/Berlin"}, after: "2026-03-28T00:00:00Z", count: 2) }',
      );
      expect(answer.data).toEqual({ schedulePreview: ['2026-03-28T01:30:00.000Z', '2026-03-29T01:00:00.000Z'] });
      const rest = await billing.team.post<{ fireTimes: string[] }>('/v1/schedules:preview', {
        schedule: { cron: '30 2 * * *', timeZone: 'Europe/Berlin' },
        after: '2026-03-28T00:00:00Z',
        count: 2,
      });
      expect(rest.body.fireTimes.map((t) => Date.parse(t))).toEqual(
        answer.data!.schedulePreview.map((t) => Date.parse(t)),
      );
      const bad = await gql('{ schedulePreview(schedule: {cron: "61 * * * *", timeZone: "Europe/Berlin"}) }');
      expect(bad.errors?.[0]).toMatchObject({
        extensions: { code: 'invalid-schedule', status: 400, field: 'schedule.cron' },
      });
    });

    it('answers RunState with the state names REST uses (run-states.ts)', async () => {
      const answer = await gql<{ __type: { enumValues: Array<{ name: string }> } }>(
        '{ __type(name: "RunState") { enumValues { name } } }',
      );
      expect(answer.data!.__type.enumValues.map((v) => v.name).sort()).toEqual([
        'cancelled',
        'dead',
        'leased',
        'ready',
        'retry_wait',
        'scheduled',
        'succeeded',
      ]);
    });
  });

  describe('errors', () => {
    it('refuses a bad request as validation-error with no stack or internals, never a 500', async () => {
      const cases: Array<[string, Record<string, unknown> | undefined, RegExp]> = [
        ['{ jobs { edges { cursor } ', undefined, /Syntax Error/],
        ['{ nope }', undefined, /Cannot query field "nope"/],
        ['{ runs(filter: {state: ready_now}) { edges { cursor } } }', undefined, /RunState/],
        ['query ($n: Int) { runs(first: $n) { edges { cursor } } }', { n: 'many' }, /\$n/],
        ['{ runs(filter: {dueAfter: "yesterday"}) { edges { cursor } } }', undefined, /ISO 8601/],
        ['{ runs(first: 501) { edges { cursor } } }', undefined, /first must be a whole number from 1 to 500/],
        ['{ runs(after: "not-a-cursor") { edges { cursor } } }', undefined, /after is not a cursor/],
        ['{ runs(filter: {job: "no/slashes"}) { edges { cursor } } }', undefined, /job must be a name/],
        // graphql-js 16 failed it as it ran it: an internal-error.
        ['subscription { queues { queue } }', undefined, /this API has no subscriptions/],
        [
          'mutation { defineJob(name: "billing.bad", definition: {priority: "urgent"}) { name } }',
          undefined,
          /priority must be one of/,
        ],
        ['mutation { defineJob(name: "billing.bad", definition: {}) { name } }', undefined, /a queue or a target/],
        [
          'mutation { enqueueRun(job: "billing.secret", delaySeconds: -1) { id } }',
          undefined,
          /delaySeconds must not be less than 0/,
        ],
        [
          'mutation { enqueueRun(job: "billing.secret", delaySeconds: 5, runAt: "2026-03-15T00:00:00Z") { id } }',
          undefined,
          /not both/,
        ],
      ];
      for (const [query, variables, message] of cases) {
        const answer = await gql(query, variables);
        expect(answer.status).toBeLessThan(500);
        expect(answer.errors).toHaveLength(1);
        expect(answer.errors![0]).toMatchObject({ message: expect.stringMatching(message) });
        expect(answer.errors![0]!.extensions).toMatchObject({ code: 'validation-error', status: 400 });
        expect(JSON.stringify(answer.errors)).not.toMatch(/stacktrace|\.ts:\d+|at \w+ \(/);
      }
      const unknownJob = await gql('mutation { enqueueRun(job: "billing.nobody") { id } }');
      expect(unknownJob.errors?.[0]?.extensions).toEqual({ code: 'not-found', status: 404 });
      const tooBig = await gql('mutation ($p: JSON) { enqueueRun(job: "billing.secret", payload: $p) { id } }', {
        p: { blob: 'x'.repeat(300_000) },
      });
      expect(tooBig.errors?.[0]?.extensions).toEqual({ code: 'payload-too-large', status: 413 });
      const wrongQueue = await gql(
        'mutation { defineJob(name: "billing.there", definition: {queue: "growth"}) { name } }',
      );
      expect(wrongQueue.errors?.[0]?.extensions).toEqual({ code: 'forbidden', status: 403 });
    });
  });

  it('answers 406 to an Accept that takes no JSON before running anything: its mutation decides nothing', async () => {
    await defineJob(gql, 'billing.accept', { queue: 'billing' });
    for (const accept of ['text/html', 'application/x-ndjson']) {
      const refused = await fetch(`${app.url}/graphql`, {
        method: 'POST',
        headers: { authorization: `Bearer ${billing.teamToken}`, 'content-type': 'application/json', accept },
        body: JSON.stringify({ query: 'mutation { pauseJob(name: "billing.accept") { paused } }' }),
      });
      expect(refused.status).toBe(406);
    }
    // Apollo refused it only after the mutation had run: the job was paused.
    expect((await gql('{ job(name: "billing.accept") { paused } }')).data).toEqual({ job: { paused: false } });
  });

  describe('limits', () => {
    it('lets the deepest query of the schema and a page of 500 runs with their events through', async () => {
      const deepest = await gql(
        '{ jobs(first: 10) { edges { node { runs(first: 10) { edges { node { events { data } } } } } } } }',
      );
      expect(deepest.errors).toBeUndefined();
      const page = await gql('{ runs(first: 500) { edges { node { id state events { type actor data } } } } }');
      expect(page.errors).toBeUndefined();
    });

    it('refuses too many aliases and too much work before running anything, naming the limit', async () => {
      const aliases = Array.from({ length: 21 }, (_, i) => `a${i}: queues { queue }`).join(' ');
      const tooMany = await gql(`{ ${aliases} }`);
      expect(tooMany.status).toBe(400);
      expect(tooMany.errors).toEqual([
        {
          message: "the query's alias count is 21, over the limit of 20",
          extensions: { code: 'validation-error', status: 400, limit: 'aliases', max: 20, actual: 21 },
        },
      ]);
      const before = statements;
      const tooMuch = await gql(
        'query ($n: Int) { jobs(first: $n) { edges { node { runs(first: 500) { edges { node { id } } } } } } }',
        { n: 500 },
      );
      expect(tooMuch.status).toBe(400);
      expect(tooMuch.errors?.[0]).toMatchObject({
        message: expect.stringMatching(/^the query's complexity is \d+, over the limit of 25000$/),
        extensions: { code: 'validation-error', status: 400, limit: 'complexity', max: 25_000 },
      });
      expect(statements - before).toBe(0); // refused before a single SQL statement
    });
  });

  describe('no N+1', () => {
    it('reads a page of runs with their events in the same few statements, 10 runs or 100', async () => {
      const team = await createTeam(app.url, ADMIN_TOKEN, 'bulk', ['bulk']);
      const bulk = graphqlClient(app.url, team.teamToken);
      await defineJob(bulk, 'bulk.many', { queue: 'bulk' });
      await defineJob(bulk, 'bulk.other', { queue: 'bulk' });
      const runs = Array.from({ length: 100 }, (_, i) => ({ job: i % 2 === 0 ? 'bulk.many' : 'bulk.other' }));
      expect((await team.team.post('/v1/runs:batch', { runs })).status).toBe(200);

      // The fewest of three tries: a timer of the app's own (the shard map's refresh) may add a
      // statement to one try, never take one away, while an N+1 shows in every try.
      const count = async (query: string): Promise<number> => {
        await bulk('{ queues { queue } }'); // the token is known: its lookup is not counted below
        let fewest = Number.POSITIVE_INFINITY;
        for (let attempt = 0; attempt < 3; attempt += 1) {
          const before = statements;
          const answer = await bulk(query);
          expect(answer.errors).toBeUndefined();
          fewest = Math.min(fewest, statements - before);
        }
        return fewest;
      };
      const page = (first: number): string =>
        `{ runs(first: ${first}) { edges { node { id events { type actor } attempts { attempt } } } } }`;
      const ten = await count(page(10));
      const hundred = await count(page(100));
      expect(hundred).toBe(ten);
      expect(hundred).toBeLessThanOrEqual(2); // the page, then every run's events in one read of the log

      const jobsWithRuns = (first: number): string =>
        `{ jobs(first: 2) { edges { node { name runs(first: ${first}) { edges { node { id events { type } } } } } } } }`;
      expect(await count(jobsWithRuns(50))).toBe(await count(jobsWithRuns(5)));
      expect(await count(jobsWithRuns(50))).toBeLessThanOrEqual(3); // jobs, their runs, the runs' events
    });
  });

  describe('introspection', () => {
    it('is on by default, and GRAPHQL_INTROSPECTION=false turns it off with a clear refusal', async () => {
      const on = await gql<{ __schema: { queryType: { name: string } } }>('{ __schema { queryType { name } } }');
      expect(on.data).toEqual({ __schema: { queryType: { name: 'Query' } } });

      const closed = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN, undefined, {
        GRAPHQL_INTROSPECTION: 'false',
      });
      try {
        const client = graphqlClient(closed.url, billing.teamToken);
        const off = await client('{ __schema { queryType { name } } }');
        expect(off.status).toBe(400);
        expect(off.errors).toEqual([
          {
            message: 'introspection is turned off on this server (GRAPHQL_INTROSPECTION=false)',
            locations: expect.any(Array),
            extensions: { code: 'validation-error', status: 400 },
          },
        ]);
        // Nor does a misspelt field hint at the schema.
        const hint = await client('{ job(name: "billing.secret") { nam } }');
        expect(hint.errors?.[0]?.message).toBe('Cannot query field "nam" on type "Job".');
        expect((await client<{ job: { name: string } }>('{ job(name: "billing.secret") { name } }')).data).toEqual({
          job: { name: 'billing.secret' },
        });
      } finally {
        await closed.close();
      }
    });
  });
});
