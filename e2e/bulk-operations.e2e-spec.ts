import { Client } from 'pg';
import type { Browser, Page } from 'playwright-core';
import { ApiModule } from '@chronicle/api';
import { ProjectorModule } from '@chronicle/projector';
import { createTestDatabase, waitFor, type TestDatabase } from '@chronicle/testing';
import {
  apiClient,
  createTeam,
  graphqlClient,
  startApp,
  type ApiClient,
  type RunningApp,
  type TeamClients,
} from './support';
import { findChromium, launchChromium, screenshot } from './support/browser';
import { buildDashboard, buildDist } from './support/build-dist';
import { chronicle } from './support/chronicle-cli';

const ADMIN_TOKEN = 'e2e-admin-token-bulk-operations-0123456789';

interface Operation {
  id: string;
  action: string;
  team: string | null;
  actor: string;
  filter: Record<string, unknown>;
  status: string;
  matched: number;
  processed: number;
  acted: number;
  skipped: number;
  error: string | null;
}
interface Preview {
  action: string;
  dryRun: boolean;
  matched: number;
  sample: Array<{
    id: string;
    job: string;
    team: string;
    state: string;
    dueAt: string | null;
    lastError: string | null;
  }>;
}
interface RecordedEvent {
  type: string;
  metadata: { actor: string; causationId?: string };
}
interface AuditItem {
  streamId: string;
  type: string;
  actor: string;
  team: string | null;
  data: { operationId: string; action: string; filter: Record<string, unknown>; matched: number; team: string | null };
}

/**
 * Bulk operations an operator trusts (docs/api.md, "Bulk operations"): a dry run with the count and a
 * sample, then batches with progress, stoppable and resumable from a persisted cursor, one entry in the
 * admin trail, never acting twice on a run or job; over REST, GraphQL, the CLI and the dashboard.
 */
describe('bulk operations', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let ops: TeamClients;
  let other: TeamClients;
  let admin: ApiClient;

  /** `n` runs of `job` waiting an hour (or ready now), by a batch enqueue: their ids. */
  const enqueue = async (client: ApiClient, job: string, n: number, delaySeconds = 3600): Promise<string[]> => {
    const batch = await client.post<{ runs: Array<{ runId: string }> }>('/v1/runs:batch', {
      runs: Array.from({ length: n }, () => ({ job, delaySeconds })),
    });
    expect(batch.status).toBe(200);
    return batch.body.runs.map((r) => r.runId);
  };
  const operation = async (client: ApiClient, id: string): Promise<Operation> => {
    const answer = await client.get<Operation>(`/v1/bulk-operations/${id}`);
    expect(answer.status).toBe(200);
    return answer.body;
  };
  /** The operation once `ready` holds, read again and again until then (a deadline, no fixed sleep). */
  const until = async (
    client: ApiClient,
    id: string,
    ready: (o: Operation) => boolean,
    description: string,
  ): Promise<Operation> => {
    let last: Operation | undefined;
    await waitFor(async () => ready((last = await operation(client, id))), {
      timeoutMs: 20_000,
      description: `${description} (last: ${JSON.stringify(last)})`,
    });
    return last!;
  };
  const start = async (client: ApiClient, body: unknown): Promise<Operation> => {
    const started = await client.post<Operation>('/v1/bulk-operations', body);
    expect([started.status, started.body.status]).toEqual([202, 'running']);
    return started.body;
  };
  const eventsOf = async (client: ApiClient, runId: string): Promise<RecordedEvent[]> =>
    (await client.get<{ events: RecordedEvent[] }>(`/v1/runs/${runId}/events`)).body.events;
  /** The admin trail's BulkOperationStarted entries a caller sees, once the projector has indexed `expected`. */
  const trail = async (client: ApiClient, expected: number): Promise<AuditItem[]> => {
    let items: AuditItem[] = [];
    await waitFor(
      async () => {
        items = (await client.get<{ items: AuditItem[] }>('/v1/audit?type=BulkOperationStarted&limit=500')).body.items;
        return items.length >= expected;
      },
      { timeoutMs: 20_000, description: `${expected} BulkOperationStarted entries` },
    );
    return items;
  };

  beforeAll(async () => {
    await Promise.all([buildDist(), buildDashboard()]);
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule, ProjectorModule], ADMIN_TOKEN);
    admin = apiClient(app.url, ADMIN_TOKEN);
    ops = await createTeam(app.url, ADMIN_TOKEN, 'ops', ['ops', 'ops-nightly']);
    other = await createTeam(app.url, ADMIN_TOKEN, 'other', ['other']);
    const retry = { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 };
    for (const [client, name, queue] of [
      [ops.team, 'ops.sync', 'ops'],
      [ops.team, 'ops.twice', 'ops'],
      [ops.team, 'ops.dying', 'ops'],
      [ops.team, 'ops.cli', 'ops'],
      [ops.team, 'ops.browser', 'ops'],
      [ops.team, 'ops.nightly-a', 'ops-nightly'],
      [ops.team, 'ops.nightly-b', 'ops-nightly'],
      [ops.team, 'ops.nightly-c', 'ops-nightly'],
      [other.team, 'other.sync', 'other'],
    ] as const)
      expect((await client.put(`/v1/jobs/${name}`, { queue, retry })).status).toBe(201);
  }, 180_000);
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  describe('cancelling runs', () => {
    let runs: string[];
    beforeAll(async () => {
      runs = (await enqueue(ops.team, 'ops.sync', 250)).sort();
      await enqueue(other.team, 'other.sync', 20);
    });

    it('shows a dry run first: the count and the first 10 by id, acting on none and recording nothing', async () => {
      const dry = await ops.team.post<Preview>('/v1/bulk-operations', {
        action: 'cancel-runs',
        filter: { job: 'ops.sync', state: 'scheduled' },
        dryRun: true,
      });
      expect(dry.status).toBe(200);
      expect(dry.body).toMatchObject({ action: 'cancel-runs', dryRun: true, matched: 250 });
      expect(dry.body.sample.map((s) => s.id)).toEqual(runs.slice(0, 10));
      expect(dry.body.sample[0]).toMatchObject({ job: 'ops.sync', team: 'ops', state: 'scheduled', lastError: null });
      // The other team's runs are not the team's: its filter without a job matches its own 250 only.
      const all = await ops.team.post<Preview>('/v1/bulk-operations', { action: 'cancel-runs', dryRun: true });
      expect(all.body.matched).toBe(250);
      expect((await ops.team.get<{ items: Operation[] }>('/v1/bulk-operations')).body.items).toEqual([]);
      const waiting = await ops.team.get<{ items: unknown[] }>('/v1/runs?job=ops.sync&state=scheduled&limit=500');
      expect(waiting.body.items).toHaveLength(250);
    });

    it('cancels in batches of 100 with its progress saved, stops after a batch, and resumes from its cursor', async () => {
      // Batch 2 waits on a run's lock that the test holds: the operation is caught between batches.
      const blocker = new Client({ connectionString: db.url });
      await blocker.connect();
      try {
        await blocker.query('SELECT pg_advisory_lock(run_lock_key($1))', [runs[150]]);
        const started = await start(ops.team, { action: 'cancel-runs', filter: { job: 'ops.sync' } });
        expect(started).toMatchObject({ action: 'cancel-runs', team: 'ops', actor: ops.teamActor, matched: 250 });
        const firstBatch = await until(ops.team, started.id, (o) => o.processed === 100, 'the first batch saved');
        expect(firstBatch).toMatchObject({ status: 'running', processed: 100, acted: 100, skipped: 0 });
        // Runs enqueued after the operation began are not in its snapshot.
        const later = await enqueue(ops.team, 'ops.sync', 5);

        const stopping = await ops.team.post<Operation>(`/v1/bulk-operations/${started.id}:stop`);
        expect([stopping.status, stopping.body.status]).toEqual([200, 'stopping']);
        await blocker.query('SELECT pg_advisory_unlock(run_lock_key($1))', [runs[150]]);
        const stopped = await until(ops.team, started.id, (o) => o.status === 'stopped', 'stopped after its batch');
        expect(stopped).toMatchObject({ processed: 200, acted: 200, skipped: 0, matched: 250 });
        // Stopped means stopped: nothing more is cancelled until it is resumed.
        const left = await ops.team.get<{ items: unknown[] }>('/v1/runs?job=ops.sync&state=scheduled&limit=500');
        expect(left.body.items).toHaveLength(55);
        expect((await ops.team.post<Operation>(`/v1/bulk-operations/${started.id}:stop`)).body.status).toBe('stopped');

        const resumed = await ops.team.post<Operation>(`/v1/bulk-operations/${started.id}:resume`);
        expect([resumed.status, resumed.body.status]).toEqual([200, 'running']);
        const done = await until(ops.team, started.id, (o) => o.status === 'done', 'done');
        expect(done).toMatchObject({ matched: 250, processed: 250, acted: 250, skipped: 0, error: null });

        // Every run of the snapshot cancelled exactly once, by the team, caused by the operation.
        for (const runId of runs) {
          const events = await eventsOf(ops.team, runId);
          const cancels = events.filter((e) => e.type === 'RunCancelled');
          expect(cancels).toHaveLength(1);
          expect(cancels[0]!.metadata).toMatchObject({ actor: ops.teamActor, causationId: started.id });
        }
        for (const runId of later)
          expect((await eventsOf(ops.team, runId)).map((e) => e.type)).toEqual(['RunScheduled']);
        // A done operation is not stopped or resumed again.
        const refused = await ops.team.post<{ type: string }>(`/v1/bulk-operations/${started.id}:resume`);
        expect([refused.status, refused.body.type]).toEqual([409, '/problems/invalid-transition']);
      } finally {
        await blocker.end();
      }
    });

    it('never acts twice: the same operation again matches nothing, and two at once cancel each run once', async () => {
      const again = await start(ops.team, {
        action: 'cancel-runs',
        filter: { job: 'ops.sync', dueBefore: '2100-01-01T00:00:00Z' },
      });
      expect((await until(ops.team, again.id, (o) => o.status === 'done', 'done')).acted).toBe(5);
      const third = await start(ops.team, {
        action: 'cancel-runs',
        filter: { job: 'ops.sync', dueBefore: '2100-01-01T00:00:00Z' },
      });
      expect(await until(ops.team, third.id, (o) => o.status === 'done', 'done')).toMatchObject({
        matched: 0,
        processed: 0,
        acted: 0,
      });

      const twice = await enqueue(ops.team, 'ops.twice', 150);
      const [a, b] = await Promise.all([
        start(ops.team, { action: 'cancel-runs', filter: { job: 'ops.twice' } }),
        start(ops.team, { action: 'cancel-runs', filter: { job: 'ops.twice' } }),
      ]);
      const [doneA, doneB] = await Promise.all([
        until(ops.team, a.id, (o) => o.status === 'done', 'a done'),
        until(ops.team, b.id, (o) => o.status === 'done', 'b done'),
      ]);
      expect(doneA.matched + doneB.matched).toBeGreaterThanOrEqual(150);
      expect(doneA.acted + doneB.acted).toBe(150);
      expect(doneA.acted + doneA.skipped).toBe(doneA.matched);
      for (const runId of twice)
        expect((await eventsOf(ops.team, runId)).filter((e) => e.type === 'RunCancelled')).toHaveLength(1);
    });
  });

  it('pauses and resumes jobs by a filter, each job once, with the team as actor', async () => {
    const dry = await ops.team.post<Preview>('/v1/bulk-operations', {
      action: 'pause-jobs',
      filter: { queue: 'ops-nightly' },
      dryRun: true,
    });
    expect(dry.body.matched).toBe(3);
    expect(dry.body.sample.map((s) => [s.id, s.state])).toEqual([
      ['ops.nightly-a', 'active'],
      ['ops.nightly-b', 'active'],
      ['ops.nightly-c', 'active'],
    ]);
    const paused = await start(ops.team, { action: 'pause-jobs', filter: { queue: 'ops-nightly' } });
    expect(await until(ops.team, paused.id, (o) => o.status === 'done', 'paused')).toMatchObject({
      matched: 3,
      acted: 3,
    });
    for (const name of ['ops.nightly-a', 'ops.nightly-b', 'ops.nightly-c'])
      expect((await ops.team.get<{ paused: boolean }>(`/v1/jobs/${name}`)).body.paused).toBe(true);
    expect((await ops.team.get<{ paused: boolean }>('/v1/jobs/ops.sync')).body.paused).toBe(false);
    let pauses: Array<{ streamId: string; actor: string }> = [];
    await waitFor(
      async () => {
        pauses = (await ops.team.get<{ items: typeof pauses }>('/v1/audit?type=JobPaused&limit=500')).body.items;
        return pauses.length >= 3;
      },
      { timeoutMs: 20_000, description: 'three JobPaused in the trail' },
    );
    expect(pauses.map((p) => [p.streamId, p.actor]).sort()).toEqual([
      ['job-ops.nightly-a', ops.teamActor],
      ['job-ops.nightly-b', ops.teamActor],
      ['job-ops.nightly-c', ops.teamActor],
    ]);

    // Pausing again finds nothing to pause.
    const again = await start(ops.team, { action: 'pause-jobs', filter: { queue: 'ops-nightly' } });
    expect(await until(ops.team, again.id, (o) => o.status === 'done', 'done')).toMatchObject({ matched: 0, acted: 0 });

    const resumed = await start(ops.team, { action: 'resume-jobs', filter: { job: 'ops.nightly-b' } });
    expect(await until(ops.team, resumed.id, (o) => o.status === 'done', 'resumed')).toMatchObject({ acted: 1 });
    expect((await ops.team.get<{ paused: boolean }>('/v1/jobs/ops.nightly-b')).body.paused).toBe(false);
    expect((await ops.team.get<{ paused: boolean }>('/v1/jobs/ops.nightly-a')).body.paused).toBe(true);
  });

  it('replays dead runs through an operation, and the DLQ bulk replay is one too', async () => {
    // 30 runs ready now (the queue's others wait an hour), each leased and failed: with one attempt, each dies.
    await enqueue(ops.team, 'ops.dying', 30, 0);
    for (;;) {
      const { body } = await ops.worker.post<{ leases: Array<{ runId: string; fencingToken: number }> }>('/v1/lease', {
        queues: ['ops'],
        max: 100,
      });
      if (body.leases.length === 0) break;
      const completions = body.leases.map((lease, i) => ({
        runId: lease.runId,
        fencingToken: lease.fencingToken,
        outcome: 'failure',
        error: i % 3 === 0 ? 'bad input' : 'SFTP Timeout after 30 s',
        retryable: true,
      }));
      expect((await ops.worker.post('/v1/runs:complete', { completions })).status).toBe(200);
    }
    const dead = (await ops.team.get<{ items: unknown[] }>('/v1/dlq?job=ops.dying&limit=500')).body.items;
    expect(dead).toHaveLength(30);

    const dry = await ops.team.post<Preview>('/v1/bulk-operations', {
      action: 'replay-dead',
      filter: { job: 'ops.dying', error: 'timeout' },
      dryRun: true,
    });
    expect(dry.body.matched).toBe(20);
    expect(dry.body.sample.every((s) => s.state === 'dead' && /Timeout/.test(s.lastError ?? ''))).toBe(true);
    const replay = await start(ops.team, { action: 'replay-dead', filter: { job: 'ops.dying', error: 'timeout' } });
    expect(await until(ops.team, replay.id, (o) => o.status === 'done', 'replayed')).toMatchObject({
      matched: 20,
      acted: 20,
    });
    expect((await ops.team.get<{ items: unknown[] }>('/v1/dlq?job=ops.dying&limit=500')).body.items).toHaveLength(10);

    // POST /v1/dlq:discard runs on the same machinery: an operation of its own, listed with the others.
    const discarded = await ops.team.post<{ matched: number; acted: number }>('/v1/dlq:discard', { job: 'ops.dying' });
    expect(discarded.body).toMatchObject({ matched: 10, acted: 10 });
    const listed = await ops.team.get<{ items: Operation[] }>('/v1/bulk-operations?status=done');
    expect(listed.body.items[0]).toMatchObject({ action: 'discard-dead', status: 'done', matched: 10, acted: 10 });
  });

  it('records each operation once in the admin trail, with its filter and count, stops and resumes included', async () => {
    const mine = (await ops.team.get<{ items: Operation[] }>('/v1/bulk-operations?limit=500')).body.items;
    const entries = await trail(ops.team, mine.length);
    expect(entries).toHaveLength(mine.length);
    for (const op of mine) {
      const theirs = entries.filter((e) => e.data.operationId === op.id);
      expect(theirs).toHaveLength(1);
      expect(theirs[0]).toMatchObject({
        streamId: 'team-ops',
        team: 'ops',
        actor: ops.teamActor,
        data: { action: op.action, filter: op.filter, matched: op.matched, team: 'ops' },
      });
    }
    const stoppedOne = entries.find((e) => e.data.action === 'cancel-runs' && e.data.matched === 250);
    expect(stoppedOne?.data.filter).toEqual({ job: 'ops.sync' });
    // GraphQL's audit shows the same.
    const gql = await graphqlClient(
      app.url,
      ops.teamToken,
    )<{
      auditEvents: { edges: Array<{ node: { type: string; data: { operationId: string } } }> };
    }>('{ auditEvents(filter: {type: "BulkOperationStarted"}, first: 500) { edges { node { type data } } } }');
    expect(gql.data?.auditEvents.edges).toHaveLength(mine.length);
  });

  it("keeps a team to its own runs and jobs; the admin acts on any team's", async () => {
    const theirs = (await ops.team.get<{ items: Operation[] }>('/v1/bulk-operations')).body.items[0]!;
    expect((await other.team.get(`/v1/bulk-operations/${theirs.id}`)).status).toBe(404);
    expect((await other.team.post(`/v1/bulk-operations/${theirs.id}:stop`)).status).toBe(404);
    expect((await other.team.get<{ items: Operation[] }>('/v1/bulk-operations')).body.items).toEqual([]);
    const forbidden = await other.team.post<{ type: string }>('/v1/bulk-operations', {
      action: 'cancel-runs',
      filter: { team: 'ops' },
      dryRun: true,
    });
    expect([forbidden.status, forbidden.body.type]).toEqual([403, '/problems/forbidden']);
    const byName = await other.team.post<Preview>('/v1/bulk-operations', {
      action: 'pause-jobs',
      filter: { job: 'ops.sync' },
      dryRun: true,
    });
    expect(byName.body.matched).toBe(0);
    expect((await ops.worker.post('/v1/bulk-operations', { action: 'cancel-runs', dryRun: true })).status).toBe(403);

    // The admin: one team's by filter.team, with its own actor; the operation is the team's to see.
    const adminDry = await admin.post<Preview>('/v1/bulk-operations', {
      action: 'cancel-runs',
      filter: { team: 'other' },
      dryRun: true,
    });
    expect(adminDry.body.matched).toBe(20);
    const adminOp = await start(admin, { action: 'cancel-runs', filter: { team: 'other' } });
    const done = await until(admin, adminOp.id, (o) => o.status === 'done', 'done');
    expect(done).toMatchObject({ team: 'other', matched: 20, acted: 20, actor: expect.stringMatching(/^admin/) });
    expect((await other.team.get<Operation>(`/v1/bulk-operations/${adminOp.id}`)).body.id).toBe(adminOp.id);
    const cancelled = await other.team.get<{ items: Array<{ runId: string }> }>('/v1/runs?state=cancelled&limit=500');
    expect(cancelled.body.items).toHaveLength(20);
    const events = await eventsOf(other.team, cancelled.body.items[0]!.runId);
    expect(events.at(-1)?.metadata.actor).toMatch(/^admin/);
    const otherTrail = await trail(other.team, 1);
    expect(otherTrail.map((e) => [e.streamId, e.data.operationId])).toEqual([['team-other', adminOp.id]]);
    const missing = await admin.post<{ type: string }>('/v1/bulk-operations', {
      action: 'cancel-runs',
      filter: { team: 'nobody' },
      dryRun: true,
    });
    expect([missing.status, missing.body.type]).toEqual([404, '/problems/not-found']);
  });

  it.each([
    [{ action: 'explode' }, 'action'],
    [{ action: 'pause-jobs', filter: { error: 'timeout' } }, 'filter.error'],
    [{ action: 'replay-dead', filter: { dueAfter: '2026-01-01T00:00:00Z' } }, 'filter.dueAfter'],
    [{ action: 'cancel-runs', filter: { dueAfter: 'yesterday' } }, 'dueAfter'],
    [{ action: 'cancel-runs', filter: { state: 'dead' } }, 'state'],
    [{ action: 'cancel-runs', filter: { job: 'not a job' } }, 'job'],
    [{ action: 'cancel-runs', filter: { colour: 'red' } }, 'colour'],
    [
      { action: 'cancel-runs', filter: { dueAfter: '2026-02-01T00:00:00Z', dueBefore: '2026-01-01T00:00:00Z' } },
      'dueAfter',
    ],
    [{ action: 'cancel-runs', dryRun: 'yes' }, 'dryRun'],
  ])('answers %p with a validation problem naming %s', async (body, field) => {
    const answer = await ops.team.post<{ type: string; detail: string }>('/v1/bulk-operations', body);
    expect([answer.status, answer.contentType, answer.body.type]).toEqual([
      400,
      expect.stringMatching(/^application\/problem\+json/),
      '/problems/validation-error',
    ]);
    expect(answer.body.detail).toContain(field);
  });

  it('answers an unknown operation with 404 problem details', async () => {
    for (const id of ['bulk_0123456789abcdef0123456789abcdef', 'nonsense']) {
      const answer = await ops.team.get<{ type: string }>(`/v1/bulk-operations/${id}`);
      expect([answer.status, answer.body.type]).toEqual([404, '/problems/not-found']);
    }
    const listing = await ops.team.get<{ type: string }>('/v1/bulk-operations?status=sleeping');
    expect([listing.status, listing.body.type]).toEqual([400, '/problems/validation-error']);
  });

  it('takes over an operation whose process died (its heartbeat stale), and finishes it', async () => {
    const runs = await enqueue(ops.team, 'ops.twice', 30);
    const blocker = new Client({ connectionString: db.url });
    await blocker.connect();
    try {
      // Held on its first batch, the operation is made to look like a dead process's.
      await blocker.query('SELECT pg_advisory_lock(run_lock_key($1))', [[...runs].sort()[0]]);
      const started = await start(ops.team, {
        action: 'cancel-runs',
        filter: { job: 'ops.twice', state: 'scheduled' },
      });
      await db.pool.query(
        "UPDATE bulk_operations SET owner = 'gone:1#dead', heartbeat_at = now() - interval '1 hour' WHERE id = $1",
        [started.id],
      );
      await blocker.query('SELECT pg_advisory_unlock(run_lock_key($1))', [[...runs].sort()[0]]);
      const done = await until(ops.team, started.id, (o) => o.status === 'done', 'taken over and done');
      expect(done).toMatchObject({ matched: 30, processed: 30 });
      expect(done.acted + done.skipped).toBe(30);
      for (const runId of runs)
        expect((await eventsOf(ops.team, runId)).filter((e) => e.type === 'RunCancelled')).toHaveLength(1);
    } finally {
      await blocker.end();
    }
  });

  it('is the same over GraphQL: a preview, a start, its progress, stop and resume, errors with their codes', async () => {
    const gql = graphqlClient(app.url, ops.teamToken);
    await enqueue(ops.team, 'ops.cli', 12);
    const preview = await gql<{ bulkOperationPreview: { matched: number; sample: Array<{ id: string }> } }>(
      `query($f: BulkFilterInput) { bulkOperationPreview(action: "cancel-runs", filter: $f) { matched sample { id job state } } }`,
      { f: { job: 'ops.cli' } },
    );
    expect(preview.errors).toBeUndefined();
    expect(preview.data?.bulkOperationPreview).toMatchObject({ matched: 12 });
    expect(preview.data?.bulkOperationPreview.sample).toHaveLength(10);
    const started = await gql<{ startBulkOperation: Operation }>(
      `mutation { startBulkOperation(action: "cancel-runs", filter: {job: "ops.cli", state: scheduled}) { id status matched } }`,
    );
    // `state` is a String: an enum literal is GraphQL's refusal.
    expect(started.errors?.[0]?.extensions.code).toBe('validation-error');
    const ok = await gql<{ startBulkOperation: Operation }>(
      `mutation { startBulkOperation(action: "cancel-runs", filter: {job: "ops.cli", state: "scheduled"}) { id status matched } }`,
    );
    expect(ok.errors).toBeUndefined();
    const id = ok.data!.startBulkOperation.id;
    expect(ok.data!.startBulkOperation).toMatchObject({ status: 'running', matched: 12 });
    await waitFor(async () => {
      const read = await gql<{ bulkOperation: Operation }>(
        `query($id: ID!) { bulkOperation(id: $id) { status acted } }`,
        {
          id,
        },
      );
      return read.data?.bulkOperation.status === 'done' && read.data.bulkOperation.acted === 12;
    });
    const stop = await gql(`mutation($id: ID!) { stopBulkOperation(id: $id) { status } }`, { id });
    expect(stop.errors?.[0]?.extensions).toMatchObject({ code: 'invalid-transition', status: 409 });
    const listed = await gql<{ bulkOperations: { edges: Array<{ node: { id: string } }> } }>(
      '{ bulkOperations(first: 1) { edges { node { id action status } } } }',
    );
    expect(listed.data?.bulkOperations.edges[0]?.node.id).toBe(id);
    const bad = await gql(`{ bulkOperationPreview(action: "pause-jobs", filter: {error: "x"}) { matched } }`);
    expect(bad.errors?.[0]?.extensions).toMatchObject({ code: 'validation-error', field: 'filter.error' });
    const theirs = await graphqlClient(app.url, other.teamToken)(`query($id: ID!) { bulkOperation(id: $id) { id } }`, {
      id,
    });
    expect(theirs.errors?.[0]?.extensions.code).toBe('not-found');
  });

  it('runs from the CLI: the count and sample, a refusal without --yes, then a progress line and the outcome', async () => {
    await enqueue(ops.team, 'ops.cli', 120);
    const env = { CHRONICLE_URL: app.url, CHRONICLE_TOKEN: ops.teamToken };
    const unconfirmed = await chronicle(['bulk', 'cancel-runs', '--job', 'ops.cli'], env);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stdout).toContain('ops.cli');
    expect(unconfirmed.stderr).toContain('cancel runs: 120 match. Go ahead? Not a terminal: add --yes');
    const ran = await chronicle(['bulk', 'cancel-runs', '--job', 'ops.cli', '--yes'], env);
    expect(ran.code).toBe(0);
    expect(ran.stderr).toMatch(/bulk_[0-9a-f]{32} cancelling: (running|done), \d+ items/);
    expect(ran.stdout).toMatch(
      /bulk_[0-9a-f]{32} done: 120 acted on, 0 skipped \(changed meanwhile\), 120 of 120 looked at\n$/,
    );
    const nothing = await chronicle(['bulk', 'cancel-runs', '--job', 'ops.cli', '--yes'], env);
    expect([nothing.code, nothing.stdout]).toEqual([0, 'nothing matches\n']);
    const listed = await chronicle(['bulk', 'list', '--json'], env);
    expect((JSON.parse(listed.stdout) as { items: Operation[] }).items[0]).toMatchObject({ acted: 120 });
    const wrong = await chronicle(['bulk', 'pause-jobs', '--error', 'x', '--yes'], env);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('validation-error: filter.error does not apply to pause-jobs');
  });

  const chromiumFound = findChromium();
  ('path' in chromiumFound ? describe : describe.skip)('in the dashboard (Chromium)', () => {
    let browser: Browser;
    let page: Page;
    beforeAll(async () => {
      browser = await launchChromium((chromiumFound as { path: string }).path);
    });
    afterAll(async () => {
      await browser?.close();
    });

    it('shows the dry run, asks, then the progress bar to done', async () => {
      const runs = await enqueue(ops.team, 'ops.browser', 230);
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      page = await context.newPage();
      page.setDefaultTimeout(15_000);
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(error.message));
      try {
        await page.goto(`${app.url}/dashboard`);
        await page.getByLabel('API token').fill(ops.teamToken);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
        await page.getByRole('link', { name: 'Bulk operations' }).click();
        await page.getByRole('heading', { level: 1, name: 'Bulk operations' }).waitFor();

        await page.getByLabel('Action').selectOption('cancel-runs');
        await page.getByLabel('Job', { exact: true }).fill('ops.browser');
        await page.getByRole('button', { name: 'Dry run' }).click();
        await page.getByText('230 waiting runs match. The first 10:').waitFor();
        expect(await page.locator('[data-sample-id]').count()).toBe(10);
        expect(await page.locator('[data-sample-id]').first().getAttribute('data-sample-id')).toBe([...runs].sort()[0]);
        await screenshot(page, 'bulk-operations-dry-run');

        await page.getByRole('button', { name: 'Cancel 230 waiting runs' }).click();
        const dialog = page.getByRole('dialog', { name: 'Cancel 230 waiting runs?' });
        await dialog.waitFor();
        await dialog.getByRole('button', { name: 'Cancel 230 waiting runs' }).click();
        await page.locator('.bulk-progress[data-status="done"]').waitFor();
        await page.getByText('done: 230 of 230 looked at, 230 acted on, 0 skipped').waitFor();
        expect(await page.locator('.bulk-progress progress').getAttribute('value')).toBe('230');
        await screenshot(page, 'bulk-operations-done');
        const cancelled = await ops.team.get<{ items: unknown[] }>(
          '/v1/runs?job=ops.browser&state=cancelled&limit=500',
        );
        expect(cancelled.body.items).toHaveLength(230);
        expect(problems).toEqual([]);
      } finally {
        await context.close();
      }
    });
  });
});
