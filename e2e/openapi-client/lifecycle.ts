import * as api from './generated/chronicle';
import { createClient, type Client } from './generated/chronicle/client';
import type { HeartbeatRunError, Job, JobBody, LeasedRun, ReplayDeadLetterError } from './generated/chronicle';
import { documentValidator, type OpenApiDocument } from '../support/openapi-document';

/*
 * A run's whole lifecycle, driven as a client developer would: through the client that
 * @hey-api/openapi-ts generated from the live /docs-json, nothing else. The test type-checks this file
 * against that client (tsc), then runs it against the server. Every request and answer is also held to
 * the document (closed objects: no field the document does not name).
 */

/** The nightly export, the OpenAPI document's example job definition (its name is the path's), client-typed. */
const NIGHTLY_EXPORT: JobBody = {
  schedule: { cron: '0 2 * * *', timeZone: 'Europe/Berlin', jitterSeconds: 0, missedRunPolicy: 'run_once' },
  queue: 'billing',
  priority: 'critical',
  timeoutSeconds: 900,
  retry: { maxAttempts: 5, baseSeconds: 30, maxSeconds: 1800 },
  concurrency: 1,
  payload: { format: 'csv' },
};

export type Lifecycle = ReturnType<typeof lifecycle>;

export function lifecycle(baseUrl: string, adminToken: string, document: OpenApiDocument) {
  const validator = documentValidator(document);
  const mismatches: string[] = [];
  // A request body the server took must be one the document accepts: refused ones are the tests' own.
  const requestMismatches = new WeakMap<Request, string[]>();
  const clientOf = (token?: string): Client => {
    const client = createClient({ baseUrl, ...(token === undefined ? {} : { auth: token }) });
    client.interceptors.request.use(async (request, options) => {
      const text = await request.clone().text();
      const body = document.paths[options.url]?.[request.method.toLowerCase()]?.requestBody;
      const schema = body?.content['application/json']?.schema;
      if (text !== '' && schema !== undefined)
        requestMismatches.set(
          request,
          validator.check(schema, JSON.parse(text)).map((e) => `request ${options.url}: ${e}`),
        );
      return request;
    });
    client.interceptors.response.use(async (response, request, options) => {
      const text = await response.clone().text();
      const contentType = response.headers.get('content-type');
      const body = text === '' ? undefined : (JSON.parse(text) as unknown);
      mismatches.push(...validator.checkResponse(request.method, options.url, response.status, contentType, body));
      if (response.ok) mismatches.push(...(requestMismatches.get(request) ?? []));
      return response;
    });
    return client;
  };
  const admin = clientOf(adminToken);
  const anonymous = clientOf();
  let team = anonymous;
  let worker = anonymous;
  let workerToken = '';
  let teamTokenId = '';

  /** Every request and answer so far as the document says. */
  const conforming = (): void => {
    expect(mismatches.splice(0)).toEqual([]);
  };
  const leaseAll = async (): Promise<LeasedRun[]> => {
    const { data, response } = await api.leaseRuns({ client: worker, body: { queues: ['billing'], max: 100 } });
    expect(response.status).toBe(200);
    return data!.leases;
  };
  const enqueue = async (job: string): Promise<string> => {
    const { data, response } = await api.enqueueRun({ client: team, path: { name: job }, body: {} });
    expect(response.status).toBe(201);
    return data!.runId;
  };

  return {
    async createTeamAndTokens(): Promise<void> {
      const health = await api.getHealth({ client: anonymous });
      expect(health.data?.status).toBe('ok');
      const created = await api.createTeam({ client: admin, body: { id: 'billing' } });
      expect([created.response.status, created.data?.id]).toEqual([201, 'billing']);
      const again = await api.createTeam({ client: admin, body: { id: 'billing' } });
      expect(again.response.status).toBe(200);
      const teamToken = await api.issueToken({
        client: admin,
        path: { team: 'billing' },
        body: { kind: 'team', queues: ['billing'] },
      });
      expect(teamToken.data).toMatchObject({ kind: 'team', team: 'billing', queues: ['billing'] });
      const workerIssued = await api.issueToken({
        client: admin,
        path: { team: 'billing' },
        body: { kind: 'worker', queues: ['billing'] },
      });
      expect(workerIssued.data).toMatchObject({ kind: 'worker', team: 'billing' });
      team = clientOf(teamToken.data!.token);
      teamTokenId = teamToken.data!.id;
      workerToken = workerIssued.data!.token;
      worker = clientOf(workerToken);
      const platform = await api.issuePlatformToken({ client: admin, body: { kind: 'worker', queues: ['shared'] } });
      expect(platform.data).toMatchObject({ kind: 'worker', team: null, queues: ['shared'] });
      const grant = await api.grantQueue({ client: admin, path: { queue: 'shared' }, body: { team: 'billing' } });
      expect([grant.response.status, grant.data?.grants]).toEqual([201, [{ team: 'billing', weight: 1 }]]);
      const grants = await api.listQueueGrants({ client: admin, path: { queue: 'shared' } });
      expect(grants.data?.grants).toEqual([{ team: 'billing', weight: 1 }]);
      const quotas = await api.setTeamQuotas({
        client: admin,
        path: { team: 'billing' },
        body: { maxPendingRuns: 1000 },
      });
      expect(quotas.data).toEqual({
        team: 'billing',
        enqueueRatePerSecond: null,
        enqueueBurst: null,
        maxPendingRuns: 1000,
        leaseRate: null,
      });
      expect((await api.getTeamQuotas({ client: admin, path: { team: 'billing' } })).data?.maxPendingRuns).toBe(1000);
      conforming();
    },

    async defineJobs(): Promise<void> {
      const defined = await api.defineJob({
        client: team,
        path: { name: 'billing.export-invoices' },
        body: NIGHTLY_EXPORT,
      });
      expect(defined.response.status).toBe(201);
      const job: Job | undefined = defined.data;
      expect(job).toEqual({
        name: 'billing.export-invoices',
        team: 'billing',
        ...NIGHTLY_EXPORT,
        schedule: {
          ...NIGHTLY_EXPORT.schedule,
          dstPolicy: { gap: 'shift', overlap: 'first' },
          overlapPolicy: 'buffer_one',
        },
        dryRun: false,
        version: 1,
        paused: false,
      });
      // What the document shows as PUT's example answer is what the server answered.
      const documented = document.paths['/v1/jobs/{name}']?.['put']?.responses['201']?.content?.['application/json'];
      expect(documented?.example).toEqual(job);
      const read = await api.getJob({ client: team, path: { name: 'billing.export-invoices' } });
      expect(read.data?.version).toBe(1);
      const preview = await api.previewJob({
        client: team,
        path: { name: 'billing.export-invoices' },
        query: { count: 2 },
      });
      expect(preview.data?.fireTimes).toHaveLength(2);
      const schedule = await api.previewSchedule({
        client: team,
        body: { schedule: { cron: '30 2 * * *', timeZone: 'Europe/Berlin' }, after: '2026-03-27T12:00:00Z', count: 3 },
      });
      expect(schedule.data?.fireTimes).toEqual([
        '2026-03-28T01:30:00Z',
        '2026-03-29T01:00:00Z',
        '2026-03-30T00:30:00Z',
      ]);
      for (const name of ['billing.adhoc', 'billing.flaky']) {
        const { response } = await api.defineJob({
          client: team,
          path: { name },
          body: { queue: 'billing', retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 } },
        });
        expect(response.status).toBe(201);
      }
      conforming();
    },

    async pauseResumeAndRun(): Promise<void> {
      const paused = await api.pauseJob({ client: team, path: { name: 'billing.adhoc' } });
      expect(paused.data?.paused).toBe(true);
      const first = await api.enqueueRun({
        client: team,
        path: { name: 'billing.adhoc' },
        body: { payload: { invoice: 42 } },
        headers: { 'Idempotency-Key': 'invoice-42' },
      });
      expect([first.response.status, first.data?.state]).toEqual([201, 'ready']);
      const runId = first.data!.runId;
      const repeated = await api.enqueueRun({
        client: team,
        path: { name: 'billing.adhoc' },
        body: { payload: { invoice: 42 } },
        headers: { 'Idempotency-Key': 'invoice-42' },
      });
      expect([repeated.response.status, repeated.data?.runId]).toEqual([200, runId]);
      expect(await leaseAll()).toEqual([]); // a paused job's runs are not leased
      const resumed = await api.resumeJob({ client: team, path: { name: 'billing.adhoc' } });
      expect(resumed.data?.paused).toBe(false);

      const [lease] = await leaseAll();
      expect(lease).toMatchObject({ runId, job: 'billing.adhoc', attempt: 1, payload: { invoice: 42 } });
      const { fencingToken } = lease!;
      const heartbeat = await api.heartbeatRun({
        client: worker,
        path: { id: runId },
        body: { fencingToken, leaseSeconds: 600 },
      });
      expect(Date.parse(heartbeat.data!.leaseExpiresAt!)).toBeGreaterThan(Date.parse(lease!.leaseExpiresAt));
      const heartbeats = await api.heartbeatRuns({ client: worker, body: { heartbeats: [{ runId, fencingToken }] } });
      const [extended] = heartbeats.data!.results;
      expect(extended).toMatchObject({ runId, leaseExpiresAt: expect.any(String) });
      const completed = await api.completeRuns({
        client: worker,
        body: { completions: [{ runId, fencingToken, outcome: 'success' }], lease: { queues: ['billing'], max: 5 } },
      });
      expect(completed.data).toEqual({ results: [{ runId, state: 'succeeded', retryAt: null }], leases: [] });
      const run = await api.getRun({ client: team, path: { id: runId } });
      expect(run.data).toMatchObject({ state: 'succeeded', attempt: 1, idempotencyKey: 'invoice-42' });
      const events = await api.getRunEvents({ client: team, path: { id: runId } });
      expect(events.data?.events.map((e) => [e.type, e.metadata.actor])).toEqual([
        ['RunScheduled', `team:billing:token:${teamTokenId}`],
        ['RunLeased', 'worker:billing:anonymous'],
        ['LeaseExtended', 'worker:billing:anonymous'],
        ['LeaseExtended', 'worker:billing:anonymous'],
        ['RunSucceeded', 'worker:billing:anonymous'],
      ]);
      conforming();
    },

    async deadLetterReplayAndDiscard(): Promise<void> {
      const runId = await enqueue('billing.flaky');
      const fail = async (): Promise<void> => {
        const lease = (await leaseAll()).find((l) => l.runId === runId)!;
        const failed = await api.completeRun({
          client: worker,
          path: { id: runId },
          body: { fencingToken: lease.fencingToken, outcome: 'failure', error: 'downstream 503' },
        });
        expect(failed.data).toEqual({ runId, state: 'dead', retryAt: null });
      };
      await fail();
      const page = await api.listDeadLetters({ client: team, query: { job: 'billing.flaky', limit: 10 } });
      expect(page.data).toEqual({
        items: [expect.objectContaining({ runId, reason: 'attempts_exhausted', lastError: 'downstream 503' })],
        nextCursor: null,
      });
      const dead = await api.getDeadLetter({ client: team, path: { id: runId } });
      expect(dead.data?.attempts.map((a) => [a.attempt, a.outcome])).toEqual([[1, 'failure']]);
      const replayed = await api.replayDeadLetter({ client: team, path: { id: runId } });
      expect(replayed.data).toMatchObject({ runId, state: 'ready' });
      await fail();
      const discarded = await api.discardDeadLetter({ client: team, path: { id: runId } });
      expect(discarded.data).toMatchObject({ runId, state: 'dead' });
      expect((await api.listDeadLetters({ client: team, query: { job: 'billing.flaky' } })).data?.items).toEqual([]);
      const again = await api.replayDeadLetter({ client: team, path: { id: runId } });
      const refused: ReplayDeadLetterError | undefined = again.error;
      expect([again.response.status, refused?.type]).toEqual([409, '/problems/invalid-transition']);
      conforming();
    },

    async cancelARun(): Promise<void> {
      const later = await api.enqueueRun({
        client: team,
        path: { name: 'billing.adhoc' },
        body: { delaySeconds: 3600 },
      });
      expect(later.data?.state).toBe('scheduled');
      const cancelled = await api.cancelRun({ client: team, path: { id: later.data!.runId } });
      expect(cancelled.data).toMatchObject({ runId: later.data!.runId, state: 'cancelled' });
      const twice = await api.cancelRun({ client: team, path: { id: later.data!.runId } });
      expect([twice.response.status, twice.error?.type]).toEqual([409, '/problems/invalid-transition']);
      conforming();
    },

    async batchAndBackfill(): Promise<void> {
      const batch = await api.enqueueRuns({
        client: team,
        body: {
          runs: [
            { job: 'billing.adhoc', idempotencyKey: 'b-1' },
            { job: 'billing.adhoc', delaySeconds: 60 },
          ],
        },
      });
      expect(batch.data?.runs.map((r) => [r.state, r.created])).toEqual([
        ['ready', true],
        ['scheduled', true],
      ]);
      const range = { from: new Date(Date.now() - 3 * 86_400_000).toISOString(), to: new Date().toISOString() };
      const backfilled = await api.backfillJob({
        client: team,
        path: { name: 'billing.export-invoices' },
        body: range,
      });
      expect(backfilled.data?.runs.length).toBeGreaterThanOrEqual(2);
      expect(backfilled.data?.runs.every((r) => r.created && r.job === 'billing.export-invoices')).toBe(true);
      const twice = await api.backfillJob({ client: team, path: { name: 'billing.export-invoices' }, body: range });
      expect(twice.data?.runs.map((r) => r.created)).toEqual(backfilled.data?.runs.map(() => false));
      conforming();
    },

    async typedProblems(): Promise<void> {
      const runId = await enqueue('billing.adhoc');
      const lease = (await leaseAll()).find((l) => l.runId === runId)!;
      const stale = await api.heartbeatRun({
        client: worker,
        path: { id: runId },
        body: { fencingToken: lease.fencingToken + 1 },
      });
      const problem: HeartbeatRunError | undefined = stale.error;
      expect(stale.response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(problem).toMatchObject({ type: '/problems/stale-lease', status: 409, title: expect.any(String) });
      const batch = await api.completeRuns({
        client: worker,
        body: {
          completions: [
            { runId, fencingToken: lease.fencingToken + 1, outcome: 'success' },
            { runId: 'run_nope', fencingToken: 1, outcome: 'success' },
          ],
        },
      });
      expect(batch.data?.results.map((r) => ('problem' in r ? r.problem.type : r.state))).toEqual([
        '/problems/stale-lease',
        '/problems/not-found',
      ]);
      const unknown = await api.getJob({ client: team, path: { name: 'billing.nope' } });
      expect([unknown.response.status, unknown.error?.type]).toEqual([404, '/problems/not-found']);
      const anonymousCall = await api.getJob({ client: anonymous, path: { name: 'billing.adhoc' } });
      expect(anonymousCall.error?.type).toBe('/problems/unauthorized');
      const wrongKind = await api.pauseJob({ client: worker, path: { name: 'billing.adhoc' } });
      expect([wrongKind.response.status, wrongKind.error?.type]).toEqual([403, '/problems/forbidden']);
      const invalid = await api.leaseRuns({ client: worker, body: { queues: ['billing'], max: 0 } });
      expect(invalid.error).toMatchObject({
        type: '/problems/validation-error',
        detail: expect.stringContaining('max'),
      });
      const badSchedule = await api.previewSchedule({ client: team, body: { schedule: { cron: '0 25 * * *' } } });
      expect(badSchedule.error).toMatchObject({ type: '/problems/invalid-schedule', field: 'schedule.cron' });
      await api.completeRun({
        client: worker,
        path: { id: runId },
        body: { fencingToken: lease.fencingToken, outcome: 'success' },
      });
      conforming();
    },
  };
}

/**
 * Never called: lines the compiler must refuse. Were the generated types `any`, each @ts-expect-error
 * would be unused, and tsc would fail on that instead.
 */
export function typeProbes(client: Client): void {
  // @ts-expect-error: pauseJob's path parameter is the job's name
  void api.pauseJob({ client, path: { id: 'run_8K2' } });
  // @ts-expect-error: a priority is critical, default or bulk
  void api.defineJob({ client, path: { name: 'billing.x' }, body: { queue: 'billing', priority: 'urgent' } });
  // @ts-expect-error: a heartbeat is not refused for a quota
  const quota: HeartbeatRunError['type'] = '/problems/quota-exceeded';
  // @ts-expect-error: a lease has no state
  void ((lease: LeasedRun) => lease.state);
  void quota;
}

/**
 * The example of docs/api.md ("The OpenAPI document, and a client generated from it"): it must compile against the
 * generated client.
 */
export async function readmeExample(): Promise<void> {
  const client = createClient({ baseUrl: 'http://localhost:3000', auth: process.env.TEAM_TOKEN });
  const { data, error } = await api.pauseJob({ client, path: { name: 'billing.export-invoices' } });
  if (error)
    console.error(error.type); // '/problems/not-found' | '/problems/forbidden' | ...
  else console.log(data.paused); // true
}
