import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SchedulerApiError, StaleLeaseError } from './errors';
import { SchedulerClient } from './scheduler-client';
import { FakeSchedulerServer } from './testing/fake-scheduler-server';

describe('SchedulerClient', () => {
  let server: FakeSchedulerServer;
  let client: SchedulerClient;

  beforeEach(async () => {
    server = await FakeSchedulerServer.start();
    client = new SchedulerClient({ baseUrl: `${server.baseUrl}/`, token: server.token });
  });
  afterEach(() => server.close());

  it('leases, heartbeats and completes a run with its fencing token', async () => {
    const run = server.enqueue({ payload: { format: 'csv' } });

    const { leases } = await client.lease({ queues: ['billing'], max: 5, leaseSeconds: 30, workerId: 'w1' });
    expect(leases).toEqual([
      expect.objectContaining({ runId: run.runId, fencingToken: run.fencingToken, payload: { format: 'csv' } }),
    ]);
    await expect(client.heartbeat(run.runId, run.fencingToken, 30)).resolves.toEqual({
      leaseExpiresAt: expect.any(String),
    });
    await expect(client.complete(run.runId, { fencingToken: run.fencingToken, outcome: 'success' })).resolves.toEqual({
      runId: run.runId,
      state: 'succeeded',
    });
    expect(server.calls.map((call) => call.body)).toEqual([
      { queues: ['billing'], max: 5, leaseSeconds: 30, workerId: 'w1' },
      { fencingToken: run.fencingToken, leaseSeconds: 30 },
      { fencingToken: run.fencingToken, outcome: 'success' },
    ]);
  });

  it('throws StaleLeaseError with the problem details when the fencing token is no longer current', async () => {
    const run = server.enqueue();
    await client.lease({ queues: ['billing'], max: 1 });
    const stale = run.fencingToken;
    server.reassign(run.runId);

    const error: unknown = await client
      .complete(run.runId, { fencingToken: stale, outcome: 'success' })
      .catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(StaleLeaseError);
    expect(error).toMatchObject({
      status: 409,
      problemType: '/problems/stale-lease',
      title: 'stale lease',
      detail: 'complete refused',
    });
  });

  it('throws SchedulerApiError for other refusals, such as a wrong token', async () => {
    const intruder = new SchedulerClient({ baseUrl: server.baseUrl, token: 'not-a-token' });

    const error: unknown = await intruder.lease({ queues: ['billing'], max: 1 }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(SchedulerApiError);
    expect(error).not.toBeInstanceOf(StaleLeaseError);
    expect(error).toMatchObject({ status: 401, problemType: '/problems/unauthorized' });
  });

  it('throws network errors and timeouts as fetch reports them', async () => {
    const silent = createServer(() => undefined); // accepts, never answers
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const port = (silent.address() as AddressInfo).port;
      const impatient = new SchedulerClient({ baseUrl: `http://127.0.0.1:${port}`, token: 't', fetchTimeoutMs: 100 });
      await expect(impatient.heartbeat('run-1', 1)).rejects.toMatchObject({ name: 'TimeoutError' });
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
    await server.close();
    await expect(client.lease({ queues: ['billing'], max: 1 })).rejects.toMatchObject({
      name: 'TypeError',
      message: 'fetch failed',
    }); // connection refused
    server = await FakeSchedulerServer.start(); // for afterEach
  });
});
