import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { ApiModule } from '@chronicle/api';
import { CANARY_QUEUE } from '@chronicle/commands';
import { ProjectorModule } from '@chronicle/projector';
import { PROJECTIONS } from '@chronicle/projections';
import { SchedulerModule } from '@chronicle/scheduler';
import { createTestDatabase, waitFor, type TestDatabase } from '@chronicle/testing';
import {
  apiClient,
  createTeam,
  scrapeMetrics,
  startApp,
  type RunningApp,
  type Scrape,
  type TeamClients,
} from './support';

const ADMIN_TOKEN = 'e2e-admin-token-metrics-0123456789abcdef';

interface Lease {
  runId: string;
  fencingToken: number;
}

describe('GET /metrics: Prometheus metrics of every process', () => {
  let db: TestDatabase;
  /** All three roles in one process, as `npm start` runs them: one registry for the API's and the scheduler's counters. */
  let app: RunningApp;
  let billing: TeamClients;
  const runIds: string[] = [];
  const critical = { queue: 'billing', priority: 'critical' };

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule, SchedulerModule, ProjectorModule], ADMIN_TOKEN);
    billing = await createTeam(app.url, ADMIN_TOKEN, 'billing', ['billing']);
    // One attempt: a failure, and an expired lease, make the run dead at once.
    const job = { queue: 'billing', priority: 'critical', retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 } };
    expect((await billing.team.put('/v1/jobs/billing.report', job)).status).toBe(201);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  const scrape = (): Promise<Scrape> => scrapeMetrics(app.url);
  /** A counter's value, 0 while its series is absent (no increment yet). */
  const count = (s: Scrape, name: string, labels: Record<string, string>): number => s.value(name, labels) ?? 0;

  it('answers in the text format without a token, with Node process metrics and every chronicle metric typed', async () => {
    const response = await fetch(`${app.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const s = await scrape();
    expect(s.value('process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(s.value('nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    expect(Object.fromEntries([...s.types].filter(([name]) => name.startsWith('chronicle_')))).toEqual({
      chronicle_schedule_lag_seconds: 'histogram',
      chronicle_auth_failures_total: 'counter',
      chronicle_auth_rate_limited_total: 'counter',
      chronicle_claim_duration_seconds: 'histogram',
      chronicle_http_request_duration_seconds: 'histogram',
      chronicle_http_target_calls_total: 'counter',
      chronicle_runs_leased_total: 'counter',
      chronicle_runs_succeeded_total: 'counter',
      chronicle_runs_failed_total: 'counter',
      chronicle_lease_expiries_total: 'counter',
      chronicle_dead_runs_total: 'counter',
      chronicle_ready_runs: 'gauge',
      chronicle_oldest_ready_age_seconds: 'gauge',
      chronicle_pass_failures_total: 'counter',
      chronicle_dlq_runs: 'gauge',
      chronicle_rate_limited_runs: 'gauge',
      chronicle_rate_limit_tokens: 'gauge',
      chronicle_projection_lag_events: 'gauge',
      chronicle_shards_held: 'gauge',
      chronicle_canary_lag_seconds: 'gauge',
      chronicle_canary_missed_total: 'counter',
      chronicle_canary_consecutive_missed: 'gauge',
      chronicle_shard_grants_total: 'counter',
      chronicle_shard_writes_refused_total: 'counter',
      chronicle_run_server_up: 'gauge',
    });
    // Every queue granted shows every priority, zeros included. The canaries' queue shows too once the
    // scheduler has materialised their first runs, which may be before this scrape or after it.
    const readyLabels = s.series('chronicle_ready_runs').map((x) => x.labels);
    expect(readyLabels.filter((labels) => labels['queue'] !== CANARY_QUEUE)).toEqual([
      { queue: 'billing', priority: 'critical' },
      { queue: 'billing', priority: 'default' },
      { queue: 'billing', priority: 'bulk' },
    ]);
  });

  it('moves the gauges and counters as runs are enqueued, leased, completed, failed and reaped', async () => {
    const before = await scrape();
    const enqueued = await billing.team.post<{ runs: Array<{ runId: string }> }>('/v1/runs:batch', {
      runs: [{ job: 'billing.report' }, { job: 'billing.report' }, { job: 'billing.report' }],
    });
    expect(enqueued.status).toBe(200);
    runIds.push(...enqueued.body.runs.map((r) => r.runId));

    const ready = await scrape();
    expect(ready.value('chronicle_ready_runs', critical)).toBe(3);
    expect(ready.value('chronicle_oldest_ready_age_seconds', critical)).toBeGreaterThanOrEqual(0);

    const lease = async (max: number, leaseSeconds: number): Promise<Lease[]> => {
      const leased = await billing.worker.post<{ leases: Lease[] }>('/v1/lease', {
        queues: ['billing'],
        max,
        leaseSeconds,
        workerId: 'metrics-e2e',
      });
      expect(leased.status).toBe(200);
      return leased.body.leases;
    };
    const [succeeding, failing] = await lease(2, 600);
    const complete = (l: Lease, outcome: 'success' | 'failure') =>
      billing.worker.post(`/v1/runs/${l.runId}/complete`, { fencingToken: l.fencingToken, outcome, error: 'boom' });
    expect((await complete(succeeding!, 'success')).status).toBe(200);
    expect((await complete(failing!, 'failure')).status).toBe(200);

    const completed = await scrape();
    const delta = (s: Scrape, name: string, labels: Record<string, string> = critical): number =>
      count(s, name, labels) - count(before, name, labels);
    expect(delta(completed, 'chronicle_runs_leased_total')).toBe(2);
    expect(delta(completed, 'chronicle_runs_succeeded_total')).toBe(1);
    expect(delta(completed, 'chronicle_runs_failed_total')).toBe(1);
    expect(delta(completed, 'chronicle_dead_runs_total')).toBe(1);
    expect(completed.value('chronicle_ready_runs', critical)).toBe(1);
    expect(completed.value('chronicle_dlq_runs', { queue: 'billing' })).toBe(1);
    // First leases of runs due now: counted in the lag histogram, well under its 10 s bucket.
    expect(delta(completed, 'chronicle_schedule_lag_seconds_count', { priority: 'critical' })).toBe(2);
    expect(completed.value('chronicle_schedule_lag_seconds_bucket', { priority: 'critical', le: '10' })).toBe(
      completed.value('chronicle_schedule_lag_seconds_count', { priority: 'critical' }),
    );
    expect(delta(completed, 'chronicle_claim_duration_seconds_count', {})).toBeGreaterThanOrEqual(1);

    // The last run's lease of a second runs out: the scheduler's reaper expires it, and it is dead.
    const [expiring] = await lease(1, 1);
    expect(expiring).toBeDefined();
    let reaped = completed;
    await waitFor(async () => {
      reaped = await scrape();
      return delta(reaped, 'chronicle_lease_expiries_total', { queue: 'billing' }) === 1;
    }, 15_000);
    expect(delta(reaped, 'chronicle_runs_leased_total')).toBe(3);
    expect(delta(reaped, 'chronicle_dead_runs_total')).toBe(2);
    expect(reaped.value('chronicle_dlq_runs', { queue: 'billing' })).toBe(2);
    expect(reaped.value('chronicle_ready_runs', critical)).toBe(0);
    expect(reaped.value('chronicle_oldest_ready_age_seconds', critical)).toBe(0);
  }, 30_000);

  it("shows each projection's distance from the log's head, down to 0 once the projector caught up", async () => {
    await waitFor(async () => {
      const s = await scrape();
      return PROJECTIONS.every(
        ({ name }) => s.value('chronicle_projection_lag_events', { projection: name, server: 'control' }) === 0,
      );
    }, 15_000);
  });

  it('labels HTTP requests by route template (or mount path), never by run id, and unknown paths by one value', async () => {
    const runId = runIds[0]!;
    expect((await billing.team.get(`/v1/runs/${runId}`)).status).toBe(200);
    expect((await billing.team.post(`/v1/runs/${runId}:cancel`)).status).toBe(409);
    expect((await billing.team.get(`/no/such/${runId}`)).status).toBe(404);
    expect((await billing.team.post('/graphql', { query: `{ run(id: "${runId}") { state } }` })).status).toBe(200);
    expect((await billing.team.get('/docs-json')).status).toBe(200);
    const s = await scrape();
    const requests = (labels: Record<string, string>): number | undefined =>
      s.value('chronicle_http_request_duration_seconds_count', labels);
    expect(requests({ method: 'GET', route: '/v1/runs/:id', status: '200' })).toBeGreaterThanOrEqual(1);
    expect(requests({ method: 'POST', route: '/v1/runs/:id:cancel', status: '409' })).toBe(1);
    expect(requests({ method: 'POST', route: '/v1/runs/:id/complete', status: '200' })).toBe(2);
    expect(requests({ method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    expect(requests({ method: 'POST', route: '/graphql', status: '200' })).toBe(1);
    for (const id of runIds) expect(s.text).not.toContain(id);
  });

  it('serves every metric that the alerts and the Grafana dashboard in deploy/ query', async () => {
    const s = await scrape();
    const deploy = path.resolve(__dirname, '..', 'deploy');
    const dashboard = JSON.parse(readFileSync(path.join(deploy, 'grafana', 'chronicle-dashboard.json'), 'utf8')) as {
      panels: Array<{ targets?: Array<{ expr: string }> }>;
    };
    const queries = [
      readFileSync(path.join(deploy, 'prometheus', 'alerts.yml'), 'utf8'),
      ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
    ];
    const named = new Set(queries.flatMap((q) => q.match(/\b(chronicle|process|nodejs)_[a-z0-9_]+/g) ?? []));
    expect(named.size).toBeGreaterThan(10);
    expect([...named].filter((name) => !s.names.has(name))).toEqual([]);
  });

  describe('with METRICS_AUTH=admin', () => {
    /** A scheduler process alone: /metrics is every process's, not only the API's. */
    let scheduler: RunningApp;
    beforeAll(async () => {
      scheduler = await startApp(db.pool, db.eventStore, [SchedulerModule], ADMIN_TOKEN, undefined, {
        METRICS_AUTH: 'admin',
      });
    });
    afterAll(async () => {
      await scheduler?.close();
    });

    it('refuses a scrape without the admin token with a problem, and answers the admin', async () => {
      for (const token of [undefined, billing.teamToken]) {
        const refused = await apiClient(scheduler.url, token).get('/metrics');
        expect(refused.status).toBe(401);
        expect(refused.contentType).toMatch(/^application\/problem\+json/);
        expect(refused.body).toMatchObject({ type: '/problems/unauthorized', status: 401, instance: '/metrics' });
      }
      const s = await scrapeMetrics(scheduler.url, ADMIN_TOKEN);
      expect(s.value('process_cpu_user_seconds_total')).toBeGreaterThan(0);
      expect(s.types.get('chronicle_lease_expiries_total')).toBe('counter');
      // The read models' gauges are the API's: a scheduler process does not repeat them.
      expect(s.types.has('chronicle_ready_runs')).toBe(false);
    });
  });
});
