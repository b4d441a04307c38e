import { PassThrough } from 'node:stream';
import {
  AccessDeniedError,
  CancelledError,
  DeadlineExceededError,
  NotLeaderError,
  StreamDeletedError,
  StreamNotFoundError,
  TimeoutError,
  UnavailableError,
  UnsupportedError,
  WrongExpectedVersionError,
  convertToCommandError,
  type KurrentDBClient,
} from '@kurrent/kurrentdb-client';
import { EventStoreUnavailableError, InvalidAppendError, WrongExpectedRevisionError } from '../event-store.errors';
import type { RecordedEvent } from '../event-store.port';
import { KurrentDbEventStore, mapKurrentError } from './kurrentdb.event-store';

/**
 * The client's error classes are built for real: most take a gRPC ServiceError, which we fake with the two
 * fields their constructors read (code, and metadata as a plain map, the shape the native bridge hands over).
 */
type ServiceErrorLike = NonNullable<ConstructorParameters<typeof UnavailableError>[0]>;

function serviceError(code: number, message: string, metadata: Record<string, string> = {}): ServiceErrorLike {
  return Object.assign(new Error(message), {
    code,
    details: message,
    metadata: { getMap: () => metadata },
  }) as unknown as ServiceErrorLike;
}

describe('mapKurrentError', () => {
  describe('wrong expected version', () => {
    it('reports the stream, the caller’s own expectation and the actual revision', () => {
      const err = new WrongExpectedVersionError(undefined, { streamName: 'job-1', expected: 3n, current: 5n });
      const mapped = mapKurrentError(err, { expected: new Map([['job-1', 3n]]) });
      expect(mapped).toBeInstanceOf(WrongExpectedRevisionError);
      expect(mapped).toMatchObject({ code: 'wrong-expected-revision', streamId: 'job-1', expected: 3n, actual: 5n });
    });

    it('says no_stream when the stream does not exist', () => {
      const err = new WrongExpectedVersionError(undefined, {
        streamName: 'job-1',
        expected: 'stream_exists',
        current: 'no_stream',
      });
      expect(mapKurrentError(err, { expected: new Map([['job-1', 'stream_exists']]) })).toMatchObject({
        streamId: 'job-1',
        expected: 'stream_exists',
        actual: 'no_stream',
      });
    });

    it('picks the conflicting stream of a multi-stream append and its expectation from the context', () => {
      const err = WrongExpectedVersionError.fromRevisionConflict({
        stream: 'schedule-7',
        expectedRevision: '0',
        actualRevision: '4',
      });
      const context = {
        expected: new Map<string, 'no_stream' | bigint>([
          ['job-1', 'no_stream'],
          ['schedule-7', 0n],
        ]),
      };
      expect(mapKurrentError(err, context)).toMatchObject({ streamId: 'schedule-7', expected: 0n, actual: 4n });
    });

    it('falls back to what the error says when the context knows nothing', () => {
      const err = WrongExpectedVersionError.fromRevisionConflict({
        stream: 's',
        expectedRevision: '-4',
        actualRevision: '-1',
      });
      expect(mapKurrentError(err)).toMatchObject({ streamId: 's', expected: 'stream_exists', actual: 'no_stream' });
    });

    it('reads the numeric expectations of the gRPC metadata form', () => {
      const raw = serviceError(9, 'wrong expected version', {
        'stream-name': 'job-2',
        'expected-version': '-1',
        'actual-version': '3',
      });
      const err = new WrongExpectedVersionError(raw);
      expect(mapKurrentError(err)).toMatchObject({ streamId: 'job-2', expected: 'no_stream', actual: 3n });
    });

    it('uses the only stream of the context when the error names none', () => {
      const err = new WrongExpectedVersionError(undefined, { streamName: '', expected: 'any', current: 1n });
      expect(mapKurrentError(err, { expected: new Map([['job-3', 0n]]) })).toMatchObject({
        streamId: 'job-3',
        expected: 0n,
        actual: 1n,
      });
    });

    it('leaves the actual revision unknown for a deleted or tombstoned stream', () => {
      const deleted = new WrongExpectedVersionError(undefined, { streamName: 's', expected: 0n, current: -5n });
      expect((mapKurrentError(deleted) as WrongExpectedRevisionError).actual).toBeUndefined();
    });
  });

  describe('unavailable', () => {
    const leader = serviceError(14, 'not leader', { 'leader-endpoint-host': 'node-2', 'leader-endpoint-port': '2113' });
    it.each([
      ['UnavailableError', new UnavailableError()],
      ['DeadlineExceededError', new DeadlineExceededError()],
      ['CancelledError', new CancelledError()],
      ['TimeoutError', new TimeoutError()],
      ['NotLeaderError', new NotLeaderError(leader)],
      [
        'a gRPC UNAVAILABLE the client converted',
        convertToCommandError(serviceError(14, '14 UNAVAILABLE: No connection established')),
      ],
      ['a gRPC DEADLINE_EXCEEDED the client converted', convertToCommandError(serviceError(4, '4 DEADLINE_EXCEEDED'))],
      // Seen from appendToStream and multiStreamAppend with no server: the raw ServiceError, unconverted.
      [
        'a raw gRPC UNAVAILABLE',
        serviceError(14, '14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED'),
      ],
      ['failed cluster discovery', new Error('Failed to discover after 10 attempts.')],
    ])('maps %s to EventStoreUnavailableError, keeping the cause', (_, err) => {
      const mapped = mapKurrentError(err);
      expect(mapped).toBeInstanceOf(EventStoreUnavailableError);
      expect(mapped).toMatchObject({ code: 'event-store-unavailable' });
      expect((mapped as EventStoreUnavailableError).cause).toBe(err);
    });

    it('constructs the client errors it claims to (sanity check of the fixtures)', () => {
      expect(new NotLeaderError(leader).leader).toEqual({ address: 'node-2', port: 2113 });
      expect(convertToCommandError(serviceError(14, 'x'))).toBeInstanceOf(UnavailableError);
    });
  });

  it.each([
    ['StreamDeletedError', StreamDeletedError.fromStreamName('job-1')],
    ['StreamNotFoundError', new StreamNotFoundError(undefined, 'job-1')],
    ['AccessDeniedError', new AccessDeniedError()],
    ['UnsupportedError (server older than 25.1)', new UnsupportedError('multiStreamAppend', '25.1')],
    ['a plain Error', new Error('boom')],
    ['a non-Error', 'boom'],
  ])('rethrows %s as is', (_, err) => {
    expect(mapKurrentError(err)).toBe(err);
  });
});

describe('KurrentDbEventStore error paths (fake client)', () => {
  const failingRead = (err: Error) => () =>
    (async function* () {
      yield* [];
      throw err;
    })();
  const storeWith = (client: Partial<Record<keyof KurrentDBClient, unknown>>): KurrentDbEventStore =>
    new KurrentDbEventStore(client as unknown as KurrentDBClient);

  it('reads an unknown stream as empty', async () => {
    const store = storeWith({ readStream: failingRead(new StreamNotFoundError(undefined, 'job-1')) });
    await expect(store.readStream('job-1')).resolves.toEqual([]);
  });

  it('maps a read failure', async () => {
    const store = storeWith({ readStream: failingRead(new UnavailableError()) });
    await expect(store.readStream('job-1')).rejects.toBeInstanceOf(EventStoreUnavailableError);
  });

  it('pings: an unknown stream is an answer, anything else is unavailability', async () => {
    await expect(
      storeWith({ readStream: failingRead(new StreamNotFoundError(undefined, 'x')) }).ping(),
    ).resolves.toBeUndefined();
    await expect(storeWith({ readStream: failingRead(new UnavailableError()) }).ping()).rejects.toBeInstanceOf(
      EventStoreUnavailableError,
    );
    await expect(storeWith({ readStream: failingRead(new AccessDeniedError()) }).ping()).rejects.toBeInstanceOf(
      EventStoreUnavailableError,
    );
  });

  it('maps a conflict of a single-stream append', async () => {
    const appendToStream = jest
      .fn()
      .mockRejectedValue(new WrongExpectedVersionError(undefined, { streamName: 'job-1', expected: 1n, current: 2n }));
    const store = storeWith({ appendToStream });
    const err = await store.appendToStream('job-1', 1n, [{ type: 'RunLeased', data: {} }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WrongExpectedRevisionError);
    expect(err).toMatchObject({ streamId: 'job-1', expected: 1n, actual: 2n });
    expect(appendToStream).toHaveBeenCalledWith(
      'job-1',
      [expect.objectContaining({ type: 'RunLeased', contentType: 'application/json' })],
      { streamState: 1n },
    );
  });

  it('reads the position back when the server answers an idempotent retry without one', async () => {
    const appendToStream = jest
      .fn()
      .mockResolvedValue({ success: true, nextExpectedRevision: 1n, position: undefined });
    const readStream = jest.fn(() =>
      (async function* () {
        yield {
          event: {
            streamId: 'job-1',
            id: 'x',
            revision: 1n,
            type: 'A',
            created: new Date(0),
            data: {},
            metadata: undefined,
            position: { commit: 7n, prepare: 7n },
          },
        };
      })(),
    );
    const result = await storeWith({ appendToStream, readStream }).appendToStream('job-1', 'no_stream', [
      { type: 'A', data: {} },
      { type: 'B', data: {} },
    ]);
    expect(result).toEqual({ streamId: 'job-1', nextRevision: 1n, position: { commit: 7n, prepare: 7n } });
    expect(readStream).toHaveBeenCalledWith('job-1', expect.objectContaining({ fromRevision: 1n, maxCount: 1 }));
  });

  it('rejects what a multi-stream append cannot carry before calling the server', async () => {
    const multiStreamAppend = jest.fn();
    const store = storeWith({ multiStreamAppend });
    const event = { type: 'JobCreated', data: {} };
    await expect(
      store.appendToStreams([
        { streamId: 'a', expected: 'any', events: [{ ...event, metadata: { schemaVersion: 1 } }] },
      ]),
    ).rejects.toBeInstanceOf(InvalidAppendError);
    await expect(
      store.appendToStreams([
        { streamId: 'a', expected: 'any', events: [event] },
        { streamId: 'a', expected: 'any', events: [event] },
      ]),
    ).rejects.toBeInstanceOf(InvalidAppendError);
    await expect(store.appendToStreams([{ streamId: 'a', expected: 'any', events: [] }])).rejects.toBeInstanceOf(
      InvalidAppendError,
    );
    await expect(store.appendToStream('a', 'any', [{ ...event, id: 'not-a-uuid' }])).rejects.toBeInstanceOf(
      InvalidAppendError,
    );
    expect(multiStreamAppend).not.toHaveBeenCalled();
  });

  it('returns multi-stream results in input order and maps their conflicts', async () => {
    const multiStreamAppend = jest.fn().mockResolvedValueOnce({
      position: 42n,
      responses: [
        { streamName: 'b', revision: 0n },
        { streamName: 'a', revision: 3n },
      ],
    });
    const store = storeWith({ multiStreamAppend });
    const appends = [
      { streamId: 'a', expected: 2n, events: [{ type: 'A', data: {}, metadata: { actor: 'team:x' } }] },
      { streamId: 'b', expected: 'no_stream' as const, events: [{ type: 'B', data: {} }] },
    ];
    await expect(store.appendToStreams(appends)).resolves.toEqual([
      { streamId: 'a', nextRevision: 3n, position: { commit: 42n, prepare: 42n } },
      { streamId: 'b', nextRevision: 0n, position: { commit: 42n, prepare: 42n } },
    ]);
    multiStreamAppend.mockRejectedValueOnce(
      WrongExpectedVersionError.fromRevisionConflict({ stream: 'b', expectedRevision: '-1', actualRevision: '0' }),
    );
    await expect(store.appendToStreams(appends)).rejects.toMatchObject({
      code: 'wrong-expected-revision',
      streamId: 'b',
      expected: 'no_stream',
      actual: 0n,
    });
  });

  describe('subscribeToAll', () => {
    const resolved = (n: number, type = 'RunLeased') => ({
      event: {
        streamId: 'run-1',
        id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
        revision: BigInt(n),
        type,
        created: new Date(0),
        data: { n },
        metadata: undefined,
        isJson: true,
        position: { commit: BigInt(n * 10), prepare: BigInt(n * 10) },
      },
      commitPosition: BigInt(n * 10),
    });
    const fakeSubscription = () =>
      Object.assign(new PassThrough({ objectMode: true }), { unsubscribe: jest.fn().mockResolvedValue(undefined) });

    it('yields what is buffered as one batch, skips system events, and unsubscribes when the signal aborts', async () => {
      const subscription = fakeSubscription();
      const store = storeWith({ subscribeToAll: () => subscription });
      for (const item of [resolved(1), resolved(2, '$metadata'), resolved(3)]) subscription.write(item);
      const abort = new AbortController();
      const batches: (readonly RecordedEvent[])[] = [];
      for await (const batch of store.subscribeToAll({ signal: abort.signal })) {
        batches.push(batch);
        setTimeout(() => abort.abort(), 10);
      }
      expect(batches.map((b) => b.map((e) => e.revision))).toEqual([[1n, 3n]]);
      expect(subscription.unsubscribe).toHaveBeenCalled();
    });

    it('unsubscribes when the consumer breaks out', async () => {
      const subscription = fakeSubscription();
      subscription.write(resolved(1));
      for await (const batch of storeWith({ subscribeToAll: () => subscription }).subscribeToAll()) {
        expect(batch).toHaveLength(1);
        break;
      }
      expect(subscription.unsubscribe).toHaveBeenCalled();
    });

    it.each([
      ['fails', new UnavailableError()],
      ['closes without an error', undefined],
    ])('fails as unavailable when the subscription %s, so the subscriber resubscribes', async (_, failure) => {
      const subscription = fakeSubscription();
      const store = storeWith({ subscribeToAll: () => subscription });
      setTimeout(() => subscription.destroy(failure), 10);
      const consume = async (): Promise<void> => {
        for await (const batch of store.subscribeToAll()) void batch;
      };
      await expect(consume()).rejects.toBeInstanceOf(EventStoreUnavailableError);
      expect(subscription.unsubscribe).toHaveBeenCalled();
    });
  });
});
