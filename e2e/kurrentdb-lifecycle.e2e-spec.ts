import { randomBytes } from 'node:crypto';
import { ApiModule } from '@chronicle/api';
import { createEventStore, type EventStore } from '@chronicle/event-store';
import { loadConfig } from '@chronicle/platform';
import { ProjectorModule } from '@chronicle/projector';
import { SchedulerModule } from '@chronicle/scheduler';
import { createTestDatabase, findKurrentDb, startKurrentDb, type TestDatabase } from '@chronicle/testing';
import type { ApiClient } from './support/api-client';
import { startApp, type RunningApp } from './support/start-app';
import { createTeam } from './support/team-tokens';

const ADMIN_TOKEN = 'e2e-admin-token-kurrentdb-0123456789abcdef';

interface Lease {
  runId: string;
  attempt: number;
  fencingToken: number;
}

const { connectionString, dockerProblem } = findKurrentDb();

if (connectionString === undefined && dockerProblem !== undefined) {
  process.stdout.write(
    `KurrentDB lifecycle e2e skipped: KURRENTDB_CONNECTION_STRING is unset and Docker is unavailable (${dockerProblem})\n`,
  );
  // Shown as skipped in the report, with the reason in its name.
  describe.skip(`run lifecycle on KurrentDB (skipped: no KURRENTDB_CONNECTION_STRING, no Docker: ${dockerProblem})`, () => {
    it('runs when a KurrentDB server is reachable', () => undefined);
  });
} else {
  /**
   * The product with its log in KurrentDB (EVENT_STORE=kurrentdb and
   * KURRENTDB_CONNECTION_STRING, as the configuration reads them), the read
   * models in PostgreSQL, all three roles as `npm start` runs them: a run's
   * life over HTTP. Names carry a random part, so the test also runs on a
   * shared server whose log outlives it.
   */
  describe(`run lifecycle over HTTP on KurrentDB (${connectionString !== undefined ? 'KURRENTDB_CONNECTION_STRING' : 'testcontainers'})`, () => {
    const teamId = `k${randomBytes(4).toString('hex')}`;
    const jobName = `${teamId}.lifecycle`;
    let server: Awaited<ReturnType<typeof startKurrentDb>>;
    let readModels: TestDatabase;
    let eventStore: EventStore;
    let app: RunningApp;
    let team: ApiClient;
    let worker: ApiClient;

    const lease = async (): Promise<Lease[]> =>
      (await worker.post<{ leases: Lease[] }>('/v1/lease', { queues: [teamId], max: 10, waitSeconds: 5 })).body.leases;
    const enqueue = async (body: Record<string, unknown> = {}): Promise<{ runId: string; state: string }> => {
      const response = await team.post<{ runId: string; state: string }>(`/v1/jobs/${jobName}/runs`, body);
      expect(response.status).toBe(201);
      return response.body;
    };
    const eventTypes = async (runId: string): Promise<string[]> =>
      (await team.get<{ events: Array<{ type: string }> }>(`/v1/runs/${runId}/events`)).body.events.map((e) => e.type);

    beforeAll(async () => {
      server = await startKurrentDb(connectionString);
      readModels = await createTestDatabase();
      const config = loadConfig({
        EVENT_STORE: 'kurrentdb',
        KURRENTDB_CONNECTION_STRING: server.url,
        DATABASE_URL: readModels.url,
      });
      eventStore = await createEventStore(config, readModels.pool);
      await eventStore.ping();
      app = await startApp(readModels.pool, eventStore, [ApiModule, SchedulerModule, ProjectorModule], ADMIN_TOKEN);
      ({ team, worker } = await createTeam(app.url, ADMIN_TOKEN, teamId, [teamId]));
      const defined = await team.put(`/v1/jobs/${jobName}`, {
        queue: teamId,
        retry: { maxAttempts: 3, baseSeconds: 0, maxSeconds: 0 },
      });
      expect(defined.status).toBe(201);
    }, 120_000);
    afterAll(async () => {
      await app?.close();
      await eventStore?.close();
      await readModels?.drop();
      await server?.stop();
    });

    it('enqueues, leases with a fencing token and completes a run, its history in the log', async () => {
      const run = await enqueue({ payload: { n: 1 } });
      expect(run.state).toBe('ready');
      const leases = await lease();
      expect(leases).toEqual([expect.objectContaining({ runId: run.runId, attempt: 1, fencingToken: 1 })]);
      const completed = await worker.post(`/v1/runs/${run.runId}/complete`, {
        fencingToken: leases[0]!.fencingToken,
        outcome: 'success',
      });
      expect(completed.body).toMatchObject({ state: 'succeeded' });
      expect((await team.get(`/v1/runs/${run.runId}`)).body).toMatchObject({ state: 'succeeded', attempt: 1 });
      expect(await eventTypes(run.runId)).toEqual(['RunScheduled', 'RunLeased', 'RunSucceeded']);
    });

    it('retries a failure with a greater fencing token, refusing the old one with 409 stale-lease', async () => {
      const run = await enqueue();
      const [first] = await lease();
      const failed = await worker.post(`/v1/runs/${run.runId}/complete`, {
        fencingToken: first!.fencingToken,
        outcome: 'failure',
        error: 'downstream 503',
      });
      expect(failed.body).toMatchObject({ state: 'retry_wait' });
      const [second] = await lease();
      expect(second).toMatchObject({ runId: run.runId, attempt: 2 });
      expect(second!.fencingToken).toBeGreaterThan(first!.fencingToken);
      const stale = await worker.post(`/v1/runs/${run.runId}/complete`, {
        fencingToken: first!.fencingToken,
        outcome: 'success',
      });
      expect(stale.status).toBe(409);
      expect(stale.body).toMatchObject({ type: '/problems/stale-lease' });
      const completed = await worker.post(`/v1/runs/${run.runId}/complete`, {
        fencingToken: second!.fencingToken,
        outcome: 'success',
      });
      expect(completed.body).toMatchObject({ state: 'succeeded' });
      expect(await eventTypes(run.runId)).toEqual([
        'RunScheduled',
        'RunLeased',
        'RunFailed',
        'RunLeased',
        'RunSucceeded',
      ]);
    });

    it('cancels a delayed run, and refuses to cancel it again with 409 invalid-transition', async () => {
      const run = await enqueue({ delaySeconds: 3600 });
      expect(run.state).toBe('scheduled');
      expect((await team.post(`/v1/runs/${run.runId}:cancel`)).body).toMatchObject({ state: 'cancelled' });
      const again = await team.post(`/v1/runs/${run.runId}:cancel`);
      expect(again.status).toBe(409);
      expect(again.body).toMatchObject({ type: '/problems/invalid-transition' });
      expect(await eventTypes(run.runId)).toEqual(['RunScheduled', 'RunCancelled']);
    });
  });
}
