import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ApiModule } from '@chronicle/api';
import { ProjectorModule } from '@chronicle/projector';
import { createTestDatabase, type TestDatabase, waitFor } from '@chronicle/testing';
import { apiClient, type ApiClient } from './support/api-client';
import { findChromium, launchChromium, screenshot } from './support/browser';
import { buildDashboard } from './support/build-dist';
import { startApp, type RunningApp } from './support/start-app';
import { createTeam, type TeamClients } from './support/team-tokens';

/**
 * The dashboard at /dashboard, as an on-call person uses it: Debian's Chromium, headless, driven by
 * playwright-core against a running server (the API and the projector, on a database of this file's
 * own), reading everything through /graphql. Without Chromium the browser tests skip and say why.
 */
const ADMIN_TOKEN = 'e2e-admin-token-dashboard-0123456789';
const chromiumFound = findChromium();
const describeInBrowser = 'path' in chromiumFound ? describe : describe.skip;
if ('missing' in chromiumFound) process.stdout.write(`dashboard browser tests skipped: ${chromiumFound.missing}\n`);

/** Long enough for a loaded CI machine, never a fixed sleep: each wait ends as soon as its condition holds. */
const UI_TIMEOUT_MS = 15_000;
/** The overview's promise: fresh numbers at least this often. */
const OVERVIEW_REFRESH_MS = 5000;

interface Lease {
  readonly runId: string;
  readonly fencingToken: number;
}

describe('the dashboard', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let billing: TeamClients;
  let billingToken: string;
  /** The dashboard user's token's id: what its actions' events name. */
  let billingTokenId: string;
  let growth: TeamClients;

  beforeAll(async () => {
    await buildDashboard();
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule, ProjectorModule], ADMIN_TOKEN);
    billing = await createTeam(app.url, ADMIN_TOKEN, 'billing', ['billing', 'billing-dry']);
    growth = await createTeam(app.url, ADMIN_TOKEN, 'growth', ['growth']);
    ({ token: billingToken, id: billingTokenId } = await issueTeamToken(app.url, 'billing', ['billing']));
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  describe('served by the API', () => {
    it('answers /dashboard and its pages with the app, under a CSP that allows no remote or inline script', async () => {
      for (const path of [
        '/dashboard',
        '/dashboard/',
        '/dashboard/jobs/billing.export-invoices',
        '/dashboard/jobs/ops.v2',
      ]) {
        const response = await fetch(`${app.url}${path}`);
        expect(response.status).toBe(200);
        expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
        const csp = response.headers.get('content-security-policy') ?? '';
        expect(csp).toContain("script-src 'self'");
        expect(csp).toContain("connect-src 'self'");
        expect(csp).toContain("default-src 'none'");
        expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
        expect(response.headers.get('cache-control')).toBe('no-cache');
        const html = await response.text();
        const sources = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
        expect(sources.length).toBeGreaterThan(1);
        for (const source of sources) expect(source).toMatch(/^\/dashboard\//);
        expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
      }
    });

    it('serves the hashed assets as immutable, revalidates the page with its ETag, and gzips', async () => {
      const html = await (await fetch(`${app.url}/dashboard`)).text();
      const script = /src="(\/dashboard\/assets\/[^"]+\.js)"/.exec(html)?.[1];
      expect(script).toBeDefined();
      const asset = await fetch(`${app.url}${script}`, { headers: { 'accept-encoding': 'gzip' } });
      expect(asset.status).toBe(200);
      expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
      expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(asset.headers.get('content-encoding')).toBe('gzip');
      expect((await asset.text()).length).toBeGreaterThan(1000);

      const page = await fetch(`${app.url}/dashboard`);
      const etag = page.headers.get('etag');
      expect(etag).toMatch(/^"[\w-]+"$/);
      const again = await fetch(`${app.url}/dashboard`, { headers: { 'if-none-match': etag! } });
      expect(again.status).toBe(304);
    });

    it('answers a missing asset with 404 problem details, not with the app', async () => {
      const response = await fetch(`${app.url}/dashboard/assets/nothing-here.js`);
      expect(response.status).toBe(404);
      expect(response.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(await response.json()).toMatchObject({ type: '/problems/not-found', status: 404 });
    });
  });

  describeInBrowser('in Chromium', () => {
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    const problems: string[] = [];
    let deadRunId: string;
    let succeededRunId: string;
    let dryRunId: string;

    beforeAll(async () => {
      browser = await launchChromium((chromiumFound as { path: string }).path);
      await seedRuns();
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
    });
    beforeEach(async () => {
      context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      page = await context.newPage();
      page.setDefaultTimeout(UI_TIMEOUT_MS);
      // A CSP refusal or a script error anywhere fails the test that caused it (a refused token's 401 is
      // logged by the browser too, and is not one).
      page.on('console', (message) => {
        if (message.type() === 'error' && !message.text().startsWith('Failed to load resource'))
          problems.push(message.text());
      });
      page.on('pageerror', (error) => problems.push(error.message));
    });
    afterEach(async () => {
      await context?.close();
      expect(problems.splice(0)).toEqual([]);
    });

    /** A team with a scheduled job, a run that succeeded and a run that died; another team with a job of its own. */
    async function seedRuns(): Promise<void> {
      const define = async (client: ApiClient, name: string, queue: string, overrides: Record<string, unknown>) => {
        const response = await client.put(`/v1/jobs/${name}`, {
          queue,
          priority: 'critical',
          timeoutSeconds: 60,
          retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 },
          payload: { format: 'csv', note: 'x'.repeat(10_000) },
          ...overrides,
        });
        expect([200, 201]).toContain(response.status);
      };
      await define(billing.team, 'billing.export-invoices', 'billing', {
        schedule: { cron: '0 2 * * *', timeZone: 'Europe/Berlin', jitterSeconds: 0 },
      });
      await define(billing.team, 'billing.sync-ledger', 'billing', {});
      await define(growth.team, 'growth.campaign', 'growth', {});

      succeededRunId = await enqueueAndFinish('billing.sync-ledger', 'success');
      deadRunId = await enqueueAndFinish('billing.sync-ledger', 'failure');
      await define(billing.team, 'billing.try-migration', 'billing-dry', {
        dryRun: true,
        unique: { scope: 'while-not-finished' },
        perKeyConcurrency: 2,
        orderingOnRetry: 'skip',
        keyRate: { limit: 10, per: 'minute', burst: 2 },
        debounce: { seconds: 3600 },
      });
      const dry = await billing.team.post<{ runId: string }>('/v1/jobs/billing.try-migration/runs', {
        uniqueKey: 'ledger-2026',
        concurrencyKey: 'ledger',
        orderingKey: 'book-9',
        debounceKey: 'ledger',
      });
      expect(dry.status).toBe(201);
      dryRunId = dry.body.runId;
    }

    async function enqueueAndFinish(job: string, outcome: 'success' | 'failure'): Promise<string> {
      const enqueued = await billing.team.post<{ runId: string }>(`/v1/jobs/${job}/runs`, { payload: { n: 1 } });
      expect(enqueued.status).toBe(201);
      const leased = await billing.worker.post<{ leases: Lease[] }>('/v1/lease', {
        queues: ['billing'],
        max: 1,
        waitSeconds: 5,
      });
      const lease = leased.body.leases[0]!;
      expect(lease.runId).toBe(enqueued.body.runId);
      const completed = await billing.worker.post(`/v1/runs/${lease.runId}/complete`, {
        fencingToken: lease.fencingToken,
        outcome,
        ...(outcome === 'failure' ? { error: 'ledger service answered 503', retryable: true } : {}),
      });
      expect(completed.body).toMatchObject({ state: outcome === 'success' ? 'succeeded' : 'dead' });
      return lease.runId;
    }

    async function signIn(token: string): Promise<void> {
      await page.goto(`${app.url}/dashboard`);
      await page.getByLabel('API token').fill(token);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    }

    it('signs in with the keyboard alone, keeps the token for the tab, and refuses an unknown token', async () => {
      await page.goto(`${app.url}/dashboard`);
      await page.getByLabel('API token').fill('sch_team_not-a-real-token');
      await page.keyboard.press('Enter');
      await page.getByRole('alert').filter({ hasText: 'The API refused this token.' }).waitFor();

      await page.getByLabel('API token').fill('');
      await page.getByLabel('API token').focus();
      await page.keyboard.type(billingToken);
      await page.keyboard.press('Tab');
      await page.keyboard.press('Enter'); // the focused Sign in button
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      expect(await page.evaluate("sessionStorage.getItem('chronicle.token')")).toBe(billingToken);

      await page.reload();
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      // Another tab has its own sessionStorage: it asks again.
      const otherTab = await context.newPage();
      await otherTab.goto(`${app.url}/dashboard`);
      await otherTab.getByLabel('API token').waitFor();
    });

    it('shows the team its queues per priority and the last hour in charts, refreshed every 5 s', async () => {
      await signIn(billingToken);
      const row = page.getByRole('row', { name: /^billing critical/ });
      await row.waitFor();
      expect(await row.getByRole('cell').allInnerTexts()).toEqual(['critical', '0', '0', '0', '1', '—', '—', '—']);
      // The admin caps the queue and limits its rate: the overview shows both on every priority's row.
      const capped = await apiClient(app.url, ADMIN_TOKEN).put('/v1/queues/billing/limits', {
        concurrency: 50,
        rate: { limit: 600, per: 'minute' },
      });
      expect(capped.status).toBe(200);
      await page
        .getByRole('row', { name: /^billing critical .* 50 600 per minute$/ })
        .waitFor({ timeout: OVERVIEW_REFRESH_MS + UI_TIMEOUT_MS });
      expect(await page.getByRole('row', { name: /^growth/ }).count()).toBe(0);
      for (const title of ['Schedule lag', 'Throughput', 'Lease expiries and new dead runs'])
        await page.locator('figure.chart figcaption', { hasText: title }).waitFor();
      expect(await page.locator('figure.chart canvas').count()).toBe(3);
      // The charts' numbers, from the projector's run-activity read model: one success and one failure,
      // in whichever minutes they fell.
      const throughput = page.locator('figure.chart', { hasText: 'Throughput' });
      await throughput.getByText('Numbers, last 10 minutes').click();
      await waitFor(
        async () => {
          const cells = await throughput
            .locator('tbody tr')
            .evaluateAll((rows) =>
              rows.map((row) => [...row.querySelectorAll('td')].map((td) => Number(td.textContent))),
            );
          const succeeded = cells.reduce((sum, [n = 0]) => sum + n, 0);
          const failed = cells.reduce((sum, [, n = 0]) => sum + n, 0);
          return succeeded === 1 && failed === 1;
        },
        {
          timeoutMs: OVERVIEW_REFRESH_MS + UI_TIMEOUT_MS,
          pollMs: 200,
          description: 'throughput of 1 success and 1 failure',
        },
      );

      // The next poll shows a new ready run without a reload (nothing leases it: this file's last enqueue).
      expect((await billing.team.post('/v1/jobs/billing.sync-ledger/runs', {})).status).toBe(201);
      await page
        .getByRole('row', { name: /^billing critical 1 0 0 1 / })
        .waitFor({ timeout: OVERVIEW_REFRESH_MS + UI_TIMEOUT_MS });
      await screenshot(page, 'overview-1280x800');
    });

    it('lists the team’s jobs with a filter and opens one: definition, pause and resume, next 10 fire times, runs by state', async () => {
      await signIn(billingToken);
      await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Jobs' }).click();
      await page.getByRole('link', { name: 'billing.export-invoices' }).waitFor();
      expect(await page.getByRole('link', { name: 'growth.campaign' }).count()).toBe(0);
      await page.getByLabel('Name contains').fill('ledger');
      await page.getByRole('link', { name: 'billing.export-invoices' }).waitFor({ state: 'detached' });
      await page.getByRole('link', { name: 'billing.sync-ledger' }).waitFor();
      await page.getByLabel('Name contains').fill('');

      await page.getByRole('link', { name: 'billing.export-invoices' }).click();
      await page.getByRole('heading', { level: 1, name: 'Job billing.export-invoices' }).waitFor();
      await page.locator('ol.fire-times li').nth(9).waitFor(); // the heading shows while the job loads
      expect(await page.locator('ol.fire-times li').count()).toBe(10);
      expect(await page.getByTestId('debounce').innerText()).toBe('none: enqueues may not name a debounce key');
      expect(await page.locator('ol.fire-times li time').first().getAttribute('datetime')).toMatch(/T0[01]:00:00/);
      await page.getByText('"timeZone": "Europe/Berlin"').waitFor();
      await page.getByText('"jitterSeconds": 0').waitFor();
      await page.getByText('first 4,096 characters shown').waitFor(); // the 10 KB payload, capped

      await page.getByRole('button', { name: 'Pause job' }).click();
      await page.getByTestId('paused').filter({ hasText: /^yes/ }).waitFor();
      expect((await billing.team.get('/v1/jobs/billing.export-invoices')).body).toMatchObject({ paused: true });
      await page.getByRole('button', { name: 'Resume job' }).click();
      await page.getByTestId('paused').filter({ hasText: /^no$/ }).waitFor();

      await page.goto(`${app.url}/dashboard/jobs/billing.sync-ledger`);
      await page.getByRole('link', { name: succeededRunId }).waitFor();
      await page.getByLabel('State').selectOption('dead');
      await page.getByRole('link', { name: deadRunId }).waitFor();
      await page.getByRole('link', { name: succeededRunId }).waitFor({ state: 'detached' });
      expect(await page.getByLabel('State').locator('option').allInnerTexts()).toEqual([
        'every state',
        'scheduled',
        'ready',
        'leased',
        'succeeded',
        'retry_wait',
        'dead',
        'cancelled',
      ]);
    });

    it('opens a run’s timeline: each event with its actor and time, the attempts with their errors', async () => {
      await signIn(billingToken);
      await page.goto(`${app.url}/dashboard/runs/${deadRunId}`);
      await page.getByTestId('run-state').filter({ hasText: 'dead' }).waitFor();
      const timeline = page.getByRole('list', { name: 'Events of this run, oldest first' });
      await timeline.waitFor();
      expect(await timeline.locator('.event-type').allInnerTexts()).toEqual([
        'RunScheduled',
        'RunLeased',
        'RunFailed',
        'RunDead',
      ]);
      const actors = await timeline.locator('.actor').allInnerTexts();
      expect(actors[0]).toBe(billing.teamActor);
      expect(actors[1]).toMatch(/^worker:billing/);
      for (const time of await timeline.locator('time').all())
        expect(Date.parse((await time.getAttribute('datetime'))!)).toBeGreaterThan(Date.now() - 600_000);
      const attempt = page.getByRole('row', { name: /^1 / });
      expect(await attempt.innerText()).toMatch(/failure\s+.*ledger service answered 503/);
      await screenshot(page, 'run-1280x800');
    });

    it('marks a job in dry run and its runs as dry, and a live run not; shows unique, concurrency, ordering and debounce keys and their rules', async () => {
      await signIn(billingToken);
      await page.goto(`${app.url}/dashboard/jobs/billing.try-migration`);
      await page.getByTestId('dry-run').filter({ hasText: /^yes/ }).waitFor();
      expect(await page.getByTestId('unique').innerText()).toBe('a run holds its key until it finishes');
      expect(await page.getByTestId('concurrency').innerText()).toBe('no limit; 2 per concurrency key');
      expect(await page.getByTestId('rate').innerText()).toBe('at most 10 per minute, 2 at once per concurrency key');
      expect(await page.getByTestId('ordering').innerText()).toBe(
        "a failed run's retry waits its turn; the key's later runs go on",
      );
      expect(await page.getByTestId('debounce').innerText()).toBe(
        'a run waits 3600 s after the newest enqueue of its key, with its payload',
      );
      await page.goto(`${app.url}/dashboard/runs/${dryRunId}`);
      await page.getByRole('heading', { level: 1, name: new RegExp(dryRunId) }).waitFor();
      expect(await page.getByRole('heading', { level: 1 }).locator('.dry-run').innerText()).toBe('dry run');
      expect(await page.getByTestId('unique-key').innerText()).toBe('ledger-2026');
      expect(await page.getByTestId('concurrency-key').innerText()).toBe('ledger');
      expect(await page.getByTestId('ordering-key').innerText()).toMatch(/^book-9 \(place \d+\)$/);
      expect(await page.getByTestId('debounce-key').innerText()).toBe('ledger');
      // Debounced an hour: ready an hour after it was enqueued.
      const readyAt = await page.getByTestId('available-at').locator('time').getAttribute('datetime');
      expect(Date.parse(readyAt!) - Date.now()).toBeGreaterThan(3_500_000);
      await page.goto(`${app.url}/dashboard/runs/${succeededRunId}`);
      await page.getByTestId('run-state').filter({ hasText: 'succeeded' }).waitFor();
      expect(await page.locator('.dry-run').count()).toBe(0);
    });

    it('replays a dead run after a confirmation: it leaves the list, and the team is the recorded actor', async () => {
      await signIn(billingToken);
      await page.getByRole('link', { name: 'Dead letters' }).click();
      const row = page.locator(`tr[data-run-id="${deadRunId}"]`);
      await row.waitFor();
      expect(await row.innerText()).toContain('ledger service answered 503');

      await page.getByRole('button', { name: `Replay run ${deadRunId}` }).click();
      const dialog = page.getByRole('dialog', { name: 'Replay this run?' });
      await dialog.waitFor();
      await page.keyboard.press('Escape'); // cancelling changes nothing
      await dialog.waitFor({ state: 'detached' });
      expect((await billing.team.get(`/v1/runs/${deadRunId}`)).body).toMatchObject({ state: 'dead' });

      await page.getByRole('button', { name: `Replay run ${deadRunId}` }).click();
      await screenshot(page, 'dead-letters-confirm-1280x800');
      await dialog.getByRole('button', { name: 'Replay run' }).click();
      await row.waitFor({ state: 'detached' });
      await page
        .getByRole('status')
        .filter({ hasText: `Run ${deadRunId} replayed` })
        .waitFor();
      const events = await billing.team.get<{ events: Array<{ type: string; metadata: { actor: string } }> }>(
        `/v1/runs/${deadRunId}/events`,
      );
      expect(events.body.events.at(-1)).toMatchObject({
        type: 'RunReplayed',
        metadata: { actor: `team:billing:token:${billingTokenId}` },
      });
    });

    it('refuses another team’s job and run', async () => {
      await signIn(billingToken);
      await page.goto(`${app.url}/dashboard/jobs/growth.campaign`);
      await page.getByRole('alert').filter({ hasText: 'No job growth.campaign for this token' }).waitFor();
      expect(await page.getByRole('button', { name: /Pause job|Resume job/ }).count()).toBe(0);
      const growthRun = await growth.team.post<{ runId: string }>('/v1/jobs/growth.campaign/runs', {});
      await page.goto(`${app.url}/dashboard/runs/${growthRun.body.runId}`);
      await page
        .getByRole('alert')
        .filter({ hasText: `No run ${growthRun.body.runId} for this token` })
        .waitFor();
    });

    it('reads at 390x844: nothing wider than the screen, every page reachable', async () => {
      await page.setViewportSize({ width: 390, height: 844 });
      await signIn(billingToken);
      await page.getByRole('row', { name: /^billing critical/ }).waitFor();
      await page.locator('figure.chart canvas').first().waitFor();
      for (const path of [
        '/dashboard/',
        `/dashboard/runs/${succeededRunId}`,
        '/dashboard/jobs/billing.export-invoices',
      ]) {
        await page.goto(`${app.url}${path}`);
        await page.locator('main h1').waitFor();
        await page.waitForLoadState('networkidle');
        const overflow = await page.evaluate('document.documentElement.scrollWidth - window.innerWidth');
        expect({ path, overflow }).toEqual({ path, overflow: 0 });
      }
      await page.goto(`${app.url}/dashboard/`);
      await page.getByRole('row', { name: /^billing critical/ }).waitFor();
      await screenshot(page, 'overview-390x844');
    });
  });

  // After the browser's tests: these runs would change the numbers those read.
  describe('queueHistory, the query of the charts', () => {
    const HISTORY =
      'query H($minutes: Int, $queue: String) { queueHistory(minutes: $minutes, queue: $queue) { minute priority leased succeeded failed leaseExpired dead lagP50Seconds lagP99Seconds } }';
    type HistoryAnswer = {
      data?: {
        queueHistory: Array<{ priority: string; leased: number; succeeded: number; lagP99Seconds: number | null }>;
      };
      errors?: Array<{ extensions: { code: string } }>;
    };
    const history = (client: ApiClient, variables: Record<string, unknown> = {}) =>
      client.post<HistoryAnswer>('/graphql', { query: HISTORY, variables });

    it("gives a team its own runs per minute and priority, the admin every team's, and refuses a worker token", async () => {
      await billing.team.put('/v1/jobs/billing.history', { queue: 'billing', priority: 'bulk' });
      await growth.team.put('/v1/jobs/growth.history', { queue: 'growth', priority: 'bulk' });
      for (const [clients, queue] of [
        [billing, 'billing'],
        [growth, 'growth'],
      ] as const) {
        const { runId } = (await clients.team.post<{ runId: string }>(`/v1/jobs/${queue}.history/runs`, {})).body;
        // Every ready run of the queue (the browser's tests left some): only this one is bulk. Leased as a
        // worker does, polling until it comes: with the log in its own database a new run is claimable once
        // the projector has seen it.
        await waitFor(
          async () => {
            const { leases } = (
              await clients.worker.post<{ leases: Lease[] }>('/v1/lease', { queues: [queue], max: 10, waitSeconds: 1 })
            ).body;
            for (const lease of leases)
              await clients.worker.post(`/v1/runs/${lease.runId}/complete`, {
                fencingToken: lease.fencingToken,
                outcome: 'success',
              });
            return leases.some((lease) => lease.runId === runId);
          },
          { timeoutMs: UI_TIMEOUT_MS, description: `the ${queue} run leased` },
        );
      }
      const bulk = (answer: HistoryAnswer) => (answer.data?.queueHistory ?? []).filter((p) => p.priority === 'bulk');
      const succeeded = (answer: HistoryAnswer) => bulk(answer).reduce((n, p) => n + p.succeeded, 0);
      // The projector counts them: wait until it has.
      await waitFor(async () => succeeded((await history(apiClient(app.url, ADMIN_TOKEN))).body) === 2, {
        timeoutMs: UI_TIMEOUT_MS,
        pollMs: 100,
        description: 'the projector counted both runs',
      });
      const own = (await history(billing.team)).body;
      expect(succeeded(own)).toBe(1);
      expect(bulk(own).every((p) => p.lagP99Seconds !== null && p.lagP99Seconds >= 0)).toBe(true);
      expect(succeeded((await history(apiClient(app.url, ADMIN_TOKEN), { queue: 'growth' })).body)).toBe(1);
      expect((await history(billing.worker)).body.errors?.[0]?.extensions.code).toBe('forbidden');
      expect((await history(billing.team, { minutes: 100_000 })).body.errors?.[0]?.extensions.code).toBe(
        'validation-error',
      );
    });
  });
});

/** A second team token for the same team: the dashboard's user, apart from the clients the seeding uses. */
async function issueTeamToken(baseUrl: string, team: string, queues: string[]): Promise<{ token: string; id: string }> {
  const response = await apiClient(baseUrl, ADMIN_TOKEN).post<{ token: string; id: string }>(
    `/v1/teams/${team}/tokens`,
    {
      kind: 'team',
      queues,
    },
  );
  if (response.status !== 201) throw new Error(`token not issued: ${response.status}`);
  return response.body;
}
