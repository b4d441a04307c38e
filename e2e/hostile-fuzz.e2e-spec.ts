import { Agent } from 'node:http';
import fc from 'fast-check';
import { buildClientSchema, getIntrospectionQuery, type GraphQLSchema, type IntrospectionQuery } from 'graphql';
import { createTestDatabase, TEST_EVENT_LOG, type TestDatabase, waitFor } from '@chronicle/testing';
import { buildDashboard, buildDist } from './support/build-dist';
import { operationsOf, type OpenApiDocument } from './support/openapi-document';
import { startApiProcess, type ApiProcess } from './support/fuzz/api-process';
import { fuzzRequests, UNDOCUMENTED_TARGETS } from './support/fuzz/fuzz-requests';
import { createFuzzWorld, type FuzzWorld } from './support/fuzz/fuzz-world';
import { LogHead } from './support/fuzz/log-head';
import { Coverage, faultOf, parsed, wasRefused } from './support/fuzz/verdicts';
import { describeRequest, sendRequest, wireRequest } from './support/fuzz/wire';

const ADMIN_TOKEN = 'e2e-admin-token-fuzz-0123456789abcdef';
const REQUESTS = Number(process.env['FUZZ_REQUESTS'] ?? 10_000);
const SEED = Number(process.env['FUZZ_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
const REPLAY = `${TEST_EVENT_LOG === 'split' ? 'TEST_EVENT_LOG=split ' : ''}FUZZ_SEED=${SEED} FUZZ_REQUESTS=${REQUESTS} npx jest e2e/hostile-fuzz`;

interface Finding {
  readonly index: number;
  readonly request: string;
  readonly what: string;
}

/**
 * Generated hostile requests (fast-check) over every endpoint of the API, as a deployment
 * runs it (the built process, so a crash is an exit), one at a time, so that each event appended is
 * the doing of the request before it. No request is answered 5xx, the process never dies, and a
 * refused request appends nothing: the log's head is where it was.
 */
describe(`a fuzz run of ${REQUESTS} hostile requests`, () => {
  let db: TestDatabase;
  let api: ApiProcess;
  let world: FuzzWorld;
  let document: OpenApiDocument;
  let schema: GraphQLSchema;
  const faults: Finding[] = [];
  const appendsOfRefused: Finding[] = [];
  const coverage = new Coverage();
  let sent = 0;

  beforeAll(async () => {
    // The process's code, and the dashboard's files it reads as it starts (/dashboard answers 503 without them).
    await buildDist();
    await buildDashboard();
    db = await createTestDatabase();
    api = await startApiProcess({
      DATABASE_URL: db.url,
      ...(db.logUrl === db.url ? {} : { EVENT_STORE_URL: db.logUrl }),
      SCHEDULER_ADMIN_TOKEN: ADMIN_TOKEN,
      // Most generated requests carry a token, but thousands do not: none must be refused for their address.
      AUTH_FAILURES_PER_MINUTE: '100000',
    });
    world = await createFuzzWorld(api.url, ADMIN_TOKEN);
    document = (await (await fetch(`${api.url}/docs-json`)).json()) as OpenApiDocument;
    const introspection = await fetch(`${api.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: getIntrospectionQuery() }),
    });
    schema = buildClientSchema(((await introspection.json()) as { data: IntrospectionQuery }).data);
  }, 180_000);
  afterAll(async () => {
    await api?.stop();
    await db?.drop();
  });

  /**
   * A bulk operation a request started (or resumed) runs in the background (docs/api.md, "Bulk
   * operations"): its events are that request's doing, so they are waited for before the next request.
   */
  const bulkOperationsEnded = (): Promise<void> =>
    waitFor(
      async () =>
        (await db.pool.query("SELECT 1 FROM bulk_operations WHERE status IN ('running', 'stopping') LIMIT 1"))
          .rowCount === 0,
      { timeoutMs: 30_000, pollMs: 5, description: 'the bulk operations under way to end' },
    );

  it('answers each with a status under 500, and the process never stops', async () => {
    process.stdout.write(`hostile fuzz: seed ${SEED}, ${REQUESTS} requests; replay with ${REPLAY}\n`);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const head = new LogHead(db.eventStore);
    await head.catchUp();
    const started = Date.now();
    try {
      await fc.assert(
        fc.asyncProperty(fuzzRequests(document, schema), async (plan) => {
          const index = sent++;
          const wire = wireRequest(plan, world);
          const sentAt = performance.now();
          const answer = await sendRequest(api.url, agent, wire);
          coverage.record(wire.target, answer, performance.now() - sentAt);
          const fault = faultOf(wire, answer);
          if (fault !== undefined) faults.push({ index, request: describeRequest(wire), what: fault });
          await bulkOperationsEnded();
          if ((await head.appendedSince()) > 0) {
            const events = await head.catchUp();
            if (wasRefused(wire, answer))
              appendsOfRefused.push({
                index,
                request: describeRequest(wire),
                what: `answered ${answer.status}, appended ${events.map((e) => `${e.type} to ${e.streamId}`).join(', ')}`,
              });
          }
          if (answer.status >= 200 && answer.status < 300) world.learnFrom(parsed(answer));
          // A dead or stuck process answers nothing more: stop, rather than wait out each request.
          const gone = api.exited() ?? (answer.status === 0 && !(await answersHealthz(api.url)) ? 'stuck' : undefined);
          if (gone !== undefined)
            throw new Error(`the API process is ${gone} after #${index} ${describeRequest(wire)}\n${api.output()}`);
        }),
        { seed: SEED, numRuns: REQUESTS, endOnFailure: true },
      );
    } catch (err) {
      // fast-check's report prints the whole generated request (100 KB query strings): the cause says it all.
      const cause = (err as { cause?: unknown }).cause;
      throw new Error(`${cause instanceof Error ? cause.message : String(err).slice(0, 2000)}\nreplay: ${REPLAY}`, {
        cause: err,
      });
    } finally {
      agent.destroy();
      process.stdout.write(
        `hostile fuzz: ${sent} requests in ${((Date.now() - started) / 1000).toFixed(1)} s (seed ${SEED})\n${coverage.table()}\n`,
      );
    }
    expect(report(faults)).toEqual([]);
    expect(api.exited()).toBeUndefined();
    expect(await answersHealthz(api.url)).toBe(true);
  }, 300_000);

  it('appends no event for a refused request: the log head stays where it was', () => {
    expect(sent).toBe(REQUESTS);
    expect(report(appendsOfRefused)).toEqual([]);
  });

  it("reaches the handler of every operation of the OpenAPI document, GraphQL's, /metrics' and /dashboard's", () => {
    const targets = [...operationsOf(document).map((o) => `${o.method} ${o.path}`), ...UNDOCUMENTED_TARGETS];
    expect(targets.length).toBeGreaterThan(40);
    expect(coverage.unreached(targets)).toEqual([]);
  });
});

/** Findings as a failure shows them: each with its request's index and the seed that replays it. */
function report(findings: readonly Finding[]): string[] {
  return findings.slice(0, 20).map((f) => `#${f.index} ${f.what}\n    ${f.request}\n    replay: ${REPLAY}`);
}

/** Whether the process answers GET /healthz with 200 within 10 s (looking again every 100 ms). */
async function answersHealthz(baseUrl: string): Promise<boolean> {
  const healthy = async (): Promise<boolean> =>
    (await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.status,
      () => 0,
    )) === 200;
  return waitFor(healthy, { timeoutMs: 10_000, pollMs: 100, description: `a 200 from ${baseUrl}/healthz` }).then(
    () => true,
    () => false,
  );
}
