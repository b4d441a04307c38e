import { createServer, type Server } from 'node:http';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { ApiModule } from '@chronicle/api';
import { RUN_STREAM_PREFIX } from '@chronicle/domain';
import { createTestDatabase, waitFor, type TestDatabase } from '@chronicle/testing';
import { SchedulerClient, Worker } from '@chronicle/worker-sdk';
import { createTeam, QUIET_WORKER_LOGGER, startApp, type RunningApp, type TeamClients } from './support';
import { buildDist } from './support/build-dist';
import { startRole, stopAll, type RoleProcess } from './support/role-process';

const ADMIN_TOKEN = 'e2e-admin-token-tracing-0123456789';

/** A span as an OTLP/HTTP JSON export carries it (ids in hex), the fields the checks read. */
interface ExportedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  readonly kind: number;
  readonly links?: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>;
  readonly attributes?: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>;
}

/** An OTLP collector of our own: what the OpenTelemetry SDK sends to `/v1/traces`, kept in order. */
async function startCollector(): Promise<{ url: string; spans: ExportedSpan[]; close: () => Promise<void> }> {
  const spans: ExportedSpan[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: Array<{ scopeSpans: Array<{ spans: ExportedSpan[] }> }>;
        };
        for (const resource of body.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans);
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Server span kind in OTLP. */
const SERVER = 2;
/** A caller's trace: the span of the client that enqueues, as its traceparent names it. */
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

/**
 * OpenTelemetry traces (docs/operations.md, "Traces"): an enqueue's traceparent is kept with the run and
 * handed to the worker with its lease; the SDK's attempt is a trace of its own linked to the enqueue's
 * span; the server's process sends its spans (the API call, the claim, the append, the projector's batch)
 * over OTLP to a collector; and the run's events record the trace that caused each.
 */
describe('traces from an enqueue to its run’s completion', () => {
  let db: TestDatabase;
  let collector: Awaited<ReturnType<typeof startCollector>>;
  const started: RoleProcess[] = [];
  let ops: TeamClients;
  let apiUrl: string;
  // The worker's application, with an OpenTelemetry SDK of its own: its spans kept in memory here.
  const workerSpans = new InMemorySpanExporter();
  const workerTracing = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: workerSpans })] });

  beforeAll(async () => {
    await buildDist();
    collector = await startCollector();
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(workerTracing);
    db = await createTestDatabase();
    // `npm start`'s process (the API, the scheduler and the projector), sending its spans to the collector.
    const server = await startRole('server', db, {
      SCHEDULER_ADMIN_TOKEN: ADMIN_TOKEN,
      CANARIES: 'off',
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    started.push(server);
    apiUrl = server.url;
    ops = await createTeam(apiUrl, ADMIN_TOKEN, 'ops', ['ops']);
    expect((await ops.team.put('/v1/jobs/ops.report', { queue: 'ops' })).status).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await stopAll(started);
    await workerTracing.shutdown();
    trace.disable();
    context.disable();
    await collector?.close();
    await db?.drop();
  });

  const metadataOf = async (runId: string): Promise<Array<{ type: string; metadata: Record<string, unknown> }>> =>
    (await db.eventStore.readStream(`${RUN_STREAM_PREFIX}${runId}`)).map((e) => ({
      type: e.type,
      metadata: e.metadata,
    }));

  it('links the attempt’s trace to the enqueue’s span, and records each trace with the events it caused', async () => {
    const enqueued = await ops.team.raw<{ runId: string }>(
      'POST',
      '/v1/jobs/ops.report/runs',
      {},
      { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`, tracestate: 'vendor=blue' },
    );
    expect(enqueued.status).toBe(201);
    const { runId } = enqueued.body;

    const handled: Array<{ traceparent?: string; tracestate?: string; activeTrace?: string }> = [];
    const worker = new Worker({
      client: new SchedulerClient({ baseUrl: apiUrl, token: ops.workerToken }),
      queues: ['ops'],
      waitSeconds: 1,
      logger: QUIET_WORKER_LOGGER,
      handler: async (run, context) => {
        const activeTrace = trace.getActiveSpan()?.spanContext().traceId;
        handled.push({ traceparent: run.traceparent, tracestate: run.tracestate, activeTrace });
        trace.getTracer('e2e-handler').startSpan('charge the card').end();
        await context.heartbeat();
      },
    });
    const running = worker.run();
    await waitFor(async () => (await ops.team.get<{ state: string }>(`/v1/runs/${runId}`)).body.state === 'succeeded', {
      description: 'the run to succeed',
    });
    await worker.shutdown({ graceMs: 1000 });
    await running;

    const byName = (name: string): ExportedSpan[] => collector.spans.filter((s) => s.name === name);
    await waitFor(
      () =>
        ['POST /v1/jobs/:name/runs', 'chronicle.claim', 'chronicle.complete', 'chronicle.project'].every(
          (name) => byName(name).length > 0,
        ),
      { description: 'the servers’ spans at the collector' },
    );

    // The enqueue: the API's span a child of the caller's, the append a child of it.
    const [enqueue] = byName('POST /v1/jobs/:name/runs');
    expect(enqueue).toMatchObject({ traceId: CALLER_TRACE, parentSpanId: CALLER_SPAN, kind: SERVER });
    expect(collector.spans).toContainEqual(
      expect.objectContaining({ name: 'chronicle.append', traceId: CALLER_TRACE, parentSpanId: enqueue!.spanId }),
    );
    // Handed to the worker with the lease: the enqueue's span, with the caller's tracestate.
    expect(handled).toEqual([
      {
        traceparent: `00-${CALLER_TRACE}-${enqueue!.spanId}-01`,
        tracestate: 'vendor=blue',
        activeTrace: expect.any(String),
      },
    ]);

    // The attempt: a trace of its own, linked to the enqueue's span; the handler runs in it, its span a child.
    const attempt = workerSpans.getFinishedSpans().find((s) => s.name === 'process ops.report')!;
    expect(attempt).toBeDefined();
    const { traceId: attemptTrace, spanId: attemptSpan } = attempt.spanContext();
    expect(attemptTrace).not.toBe(CALLER_TRACE);
    expect(attempt.parentSpanContext).toBeUndefined();
    expect(attempt.links.map((l) => [l.context.traceId, l.context.spanId])).toEqual([[CALLER_TRACE, enqueue!.spanId]]);
    expect(attempt.attributes).toMatchObject({ 'chronicle.run.id': runId, 'chronicle.run.attempt': 1 });
    expect(handled[0]!.activeTrace).toBe(attemptTrace);
    const work = workerSpans.getFinishedSpans().find((s) => s.name === 'charge the card')!;
    expect([work.spanContext().traceId, work.parentSpanContext?.spanId]).toEqual([attemptTrace, attemptSpan]);

    // The completion: the API's span links to the attempt it reports.
    expect(byName('chronicle.complete')).toContainEqual(
      expect.objectContaining({ links: [expect.objectContaining({ traceId: attemptTrace, spanId: attemptSpan })] }),
    );

    // The log: each event records the trace that caused it.
    const events = await metadataOf(runId);
    expect(events.map((e) => e.type)).toEqual(['RunScheduled', 'RunLeased', 'LeaseExtended', 'RunSucceeded']);
    expect(events[0]!.metadata).toMatchObject({
      traceparent: `00-${CALLER_TRACE}-${enqueue!.spanId}-01`,
      tracestate: 'vendor=blue',
    });
    // The attempt's heartbeat and its end, each naming the attempt's span.
    for (const event of events.slice(2))
      expect(event.metadata).toMatchObject({ traceparent: `00-${attemptTrace}-${attemptSpan}-01` });
  });
});

/**
 * A process that sends no traces still keeps a caller's trace context with the run and hands it on; a
 * malformed one is left out, and the enqueue goes through.
 */
describe('trace context without traces sent', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let ops: TeamClients;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN);
    ops = await createTeam(app.url, ADMIN_TOKEN, 'ops', ['ops']);
    expect((await ops.team.put('/v1/jobs/ops.report', { queue: 'ops' })).status).toBe(201);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('keeps the caller’s traceparent with the run and in its lease, and ignores a malformed one', async () => {
    const traceparent = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;
    const kept = await ops.team.raw<{ runId: string }>('POST', '/v1/jobs/ops.report/runs', {}, { traceparent });
    const malformed = await ops.team.raw<{ runId: string }>(
      'POST',
      '/v1/jobs/ops.report/runs',
      {},
      { traceparent: `00-${'0'.repeat(32)}-${CALLER_SPAN}-01` },
    );
    // GraphQL's enqueue the same: the header is the request's, whatever its API.
    const graphql = await fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ops.teamToken}`, 'content-type': 'application/json', traceparent },
      body: JSON.stringify({ query: 'mutation { enqueueRun(job: "ops.report") { id } }' }),
    });
    const viaGraphql = ((await graphql.json()) as { data: { enqueueRun: { id: string } } }).data.enqueueRun.id;
    expect([kept.status, malformed.status, graphql.status]).toEqual([201, 201, 200]);
    const scheduled = async (runId: string): Promise<Record<string, unknown>> =>
      (await db.eventStore.readStream(`${RUN_STREAM_PREFIX}${runId}`))[0]!.metadata;
    expect(await scheduled(kept.body.runId)).toMatchObject({ traceparent });
    expect(await scheduled(viaGraphql)).toMatchObject({ traceparent });
    expect(await scheduled(malformed.body.runId)).not.toHaveProperty('traceparent');

    const leases = await ops.worker.post<{ leases: Array<{ runId: string; traceparent?: string }> }>('/v1/lease', {
      queues: ['ops'],
      max: 10,
    });
    expect(leases.body.leases).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ runId: kept.body.runId, traceparent }),
        expect.objectContaining({ runId: viaGraphql, traceparent }),
        expect.not.objectContaining({ traceparent: expect.anything() }),
      ]),
    );
    expect(leases.body.leases).toHaveLength(3);
  });
});
