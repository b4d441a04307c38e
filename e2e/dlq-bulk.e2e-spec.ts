import { ApiModule } from '@chronicle/api';
import { createTestDatabase, type TestDatabase } from '@chronicle/testing';
import { createTeam, startApp, type RunningApp, type TeamClients } from './support';

const ADMIN_TOKEN = 'e2e-admin-token-dlq-bulk-0123456789';

interface Outcome {
  action: string;
  dryRun: boolean;
  matched: number;
  processed: number;
  acted: number;
  skipped: number;
}

/** POST /v1/dlq:replay and :discard: every dead run a filter selects, in batches, each with its actor. */
describe('dead letters in bulk', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let ops: TeamClients;
  let other: TeamClients;
  /** The dead runs, by the error they died of. */
  const dead: Record<'timeout' | 'input', string[]> = { timeout: [], input: [] };

  const deadRunsOf = async (job: string): Promise<string[]> => {
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { items: Array<{ runId: string }>; nextCursor: string | null } } = await ops.team.get(
        `/v1/dlq?job=${job}&limit=500${cursor === null ? '' : `&cursor=${cursor}`}`,
      );
      ids.push(...page.body.items.map((r) => r.runId));
      cursor = page.body.nextCursor;
    } while (cursor !== null);
    return ids.sort();
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN);
    ops = await createTeam(app.url, ADMIN_TOKEN, 'ops', ['ops']);
    other = await createTeam(app.url, ADMIN_TOKEN, 'other', ['other']);
    const retry = { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 };
    expect((await ops.team.put('/v1/jobs/ops.sync', { queue: 'ops', retry })).status).toBe(201);
    expect((await other.team.put('/v1/jobs/other.sync', { queue: 'other', retry })).status).toBe(201);
    // 250 runs die: 150 of a timeout, 100 of bad input. Another team's run dies of a timeout too.
    const batch = await ops.team.post<{ runs: Array<{ runId: string }> }>('/v1/runs:batch', {
      runs: Array.from({ length: 250 }, () => ({ job: 'ops.sync' })),
    });
    expect(batch.status).toBe(200);
    await other.team.post('/v1/jobs/other.sync/runs', {});
    for (const [worker, queue] of [
      [ops.worker, 'ops'],
      [other.worker, 'other'],
    ] as const) {
      for (;;) {
        const { body } = await worker.post<{ leases: Array<{ runId: string; fencingToken: number }> }>('/v1/lease', {
          queues: [queue],
          max: 100,
        });
        if (body.leases.length === 0) break;
        const completions = body.leases.map((lease, i) => {
          const kind = queue === 'other' || (dead.timeout.length + i) % 5 < 3 ? 'timeout' : 'input';
          return {
            runId: lease.runId,
            fencingToken: lease.fencingToken,
            outcome: 'failure',
            error: kind === 'timeout' ? 'SFTP upload: Timeout after 30 s' : 'bad input: no invoices',
            retryable: true,
            kind,
          };
        });
        const done = await worker.post('/v1/runs:complete', {
          completions: completions.map(({ kind: _kind, ...completion }) => completion),
        });
        expect(done.status).toBe(200);
        if (queue === 'ops') for (const c of completions) dead[c.kind as 'timeout' | 'input'].push(c.runId);
      }
    }
    expect([dead.timeout.length, dead.input.length]).toEqual([150, 100]);
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('counts without acting on a dry run', async () => {
    const dry = await ops.team.post<Outcome>('/v1/dlq:replay', { job: 'ops.sync', error: 'timeout', dryRun: true });
    expect(dry.status).toBe(200);
    expect(dry.body).toEqual({ action: 'replay', dryRun: true, matched: 150, processed: 0, acted: 0, skipped: 0 });
    expect(await deadRunsOf('ops.sync')).toHaveLength(250);
    const none = await ops.team.post<Outcome>('/v1/dlq:discard', { deadBefore: '2000-01-01T00:00:00Z', dryRun: true });
    expect(none.body.matched).toBe(0);
  });

  it('replays every match in batches, streaming its progress, each run replayed with the team as actor', async () => {
    const response = await fetch(`${app.url}/v1/dlq:replay`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${ops.teamToken}`,
        'content-type': 'application/json',
        accept: 'application/x-ndjson',
      },
      body: JSON.stringify({ error: 'TIMEOUT' }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const lines = (await response.text())
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { progress?: Outcome; done?: Outcome });
    expect(lines.map((l) => l.progress?.processed ?? l.done?.processed)).toEqual([100, 150, 150]);
    expect(lines.at(-1)!.done).toEqual({
      action: 'replay',
      dryRun: false,
      matched: 150,
      processed: 150,
      acted: 150,
      skipped: 0,
    });

    expect(await deadRunsOf('ops.sync')).toEqual([...dead.input].sort());
    const history = await ops.team.get<{ events: Array<{ type: string; metadata: { actor: string } }> }>(
      `/v1/runs/${dead.timeout[0]}/events`,
    );
    expect(history.body.events.at(-1)).toMatchObject({ type: 'RunReplayed', metadata: { actor: ops.teamActor } });
    // Another team's dead run of a timeout is not the team's to replay.
    const theirs = await other.team.get<{ items: unknown[] }>('/v1/dlq');
    expect(theirs.body.items).toHaveLength(1);
  });

  it('discards by the time they died, and a second time finds nothing left', async () => {
    const first = await ops.team.post<Outcome>('/v1/dlq:discard', {
      job: 'ops.sync',
      deadAfter: '2000-01-01T00:00:00Z',
    });
    expect(first.body).toMatchObject({ action: 'discard', matched: 100, acted: 100, skipped: 0 });
    expect(await deadRunsOf('ops.sync')).toEqual([]);
    const again = await ops.team.post<Outcome>('/v1/dlq:discard', { job: 'ops.sync' });
    expect(again.body).toMatchObject({ matched: 0, acted: 0 });
  });

  it.each([
    [{ deadAfter: 'yesterday' }, 'deadAfter'],
    [{ error: '' }, 'error'],
    [{ dryRun: 'yes' }, 'dryRun'],
    [{ job: 'not a job' }, 'job'],
  ])('answers %p with a validation problem naming the field', async (body, field) => {
    const answer = await ops.team.post<{ type: string; detail: string }>('/v1/dlq:replay', body);
    expect([answer.status, answer.body.type]).toEqual([400, '/problems/validation-error']);
    expect(answer.body.detail).toContain(field);
  });

  it('is a team call: a worker token and the admin are refused', async () => {
    expect((await ops.worker.post('/v1/dlq:replay', {})).status).toBe(403);
    const admin = await fetch(`${app.url}/v1/dlq:discard`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect([admin.status, admin.headers.get('content-type')]).toEqual([403, expect.stringMatching(/problem\+json/)]);
  });
});
