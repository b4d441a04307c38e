import { RUN_STREAM_PREFIX, runStreamId } from '@chronicle/domain';
import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { waitFor } from '@chronicle/worker-sdk/testing';
import { WrongExpectedRevisionError } from '../event-store.errors';
import { START, comparePositions, type EventStore, type LogPosition, type RecordedEvent } from '../event-store.port';

export interface ContractFixture {
  readonly store: EventStore;
  /** The read models' database the store's units of work run beside. */
  readonly readModels: Pool;
  /** Whether the store shares the read models' transaction (the log in their database). */
  readonly atomic: boolean;
  teardown(): Promise<void>;
}

/**
 * The behaviour every adapter must show, run against each one. Streams carry a
 * random prefix per test, so the suite also runs on a shared server.
 */
export function describeEventStoreContract(adapter: string, createFixture: () => Promise<ContractFixture>): void {
  describe(`event store contract: ${adapter}`, () => {
    let fixture: ContractFixture;
    let store: EventStore;
    let prefix: string;
    const stream = (name: string): string => `${prefix}-${name}`;
    const mine = (events: readonly RecordedEvent[]): RecordedEvent[] =>
      events.filter((e) => e.streamId.startsWith(prefix));
    const readMine = (from: LogPosition, count: number): Promise<RecordedEvent[]> =>
      readUntil(store, from, mine, count);

    beforeAll(async () => {
      fixture = await createFixture();
      store = fixture.store;
    });
    afterAll(async () => fixture?.teardown());
    beforeEach(() => {
      prefix = `t${randomUUID().slice(0, 8)}`;
    });

    it('appends to a new stream and reads back what was written, with ids, revisions, positions and times', async () => {
      const id = randomUUID();
      const result = await store.appendToStream(stream('run'), 'no_stream', [
        {
          id,
          type: 'RunScheduled',
          data: { dueAt: '2026-03-15T01:00:00Z' },
          metadata: { actor: 'team:billing', schemaVersion: 1 },
        },
        { type: 'RunLeased', data: { attempt: 1 } },
      ]);
      expect(result.nextRevision).toBe(1n);
      const events = await store.readStream(stream('run'));
      expect(events.map((e) => [e.type, e.revision])).toEqual([
        ['RunScheduled', 0n],
        ['RunLeased', 1n],
      ]);
      expect(events[0]).toMatchObject({
        id,
        streamId: stream('run'),
        data: { dueAt: '2026-03-15T01:00:00Z' },
        metadata: { actor: 'team:billing', schemaVersion: 1 },
      });
      expect(events[1]?.metadata).toEqual({});
      expect(events[0]?.recordedAt).toBeInstanceOf(Date);
      expect(comparePositions(events[0]!.position, events[1]!.position)).toBeLessThan(0);
      expect(events[1]?.position).toEqual(result.position);
    });

    it('gives back the metadata written, whatever its keys and their values', async () => {
      const written = [
        { actor: 'worker:ops:w-1', schemaVersion: 2, team: 'ops', correlationId: 'req-1' },
        { actor: 'team:ops', schemaVersion: 2, team: 'ops', queue: 'ops', dueAt: '2026-03-15T01:00:00.000Z' },
        // The usual keys with values of other types, and others beside them.
        { actor: 7, team: null, schemaVersion: 2.5, correlationId: ['a'], causationId: 'c', nested: { n: 1 } },
        { schemaVersion: 70_000, team: '' },
        // Correlation ids that are UUIDs, as the server makes them, and UUIDs in other spellings.
        { correlationId: '0b7e1c52-3f4d-4c8e-9a61-2d5f8e9b7a10' },
        { correlationId: '0B7E1C52-3F4D-4C8E-9A61-2D5F8E9B7A10' },
        { correlationId: '{0b7e1c52-3f4d-4c8e-9a61-2d5f8e9b7a10}' },
        { correlationId: '0b7e1c523f4d4c8e9a612d5f8e9b7a10' },
        {},
      ];
      const s = stream('meta');
      await store.appendToStream(
        s,
        'no_stream',
        written.map((metadata) => ({ type: 'Noted', data: {}, metadata })),
      );
      const events = await store.readStream(s);
      expect(events.map((e) => e.metadata)).toEqual(written);
      const [found] = await store.findEvents({ team: 'ops', actor: 'worker:ops:w-1', streamId: s, maxCount: 5 });
      expect(found?.revision).toBe(0n);
    });

    it('honours every kind of expected revision and reports the actual one on a conflict', async () => {
      const s = stream('job');
      await expect(store.appendToStream(s, 'stream_exists', [event('A')])).rejects.toMatchObject({
        code: 'wrong-expected-revision',
        streamId: s,
      });
      await store.appendToStream(s, 'no_stream', [event('A')]);
      const conflict = await store.appendToStream(s, 'no_stream', [event('B')]).catch((e: unknown) => e);
      expect(conflict).toBeInstanceOf(WrongExpectedRevisionError);
      expect(conflict).toMatchObject({ streamId: s, expected: 'no_stream' });
      await expect(store.appendToStream(s, 5n, [event('B')])).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      await expect(store.appendToStream(s, 0n, [event('B')])).resolves.toMatchObject({ nextRevision: 1n });
      await expect(store.appendToStream(s, 'stream_exists', [event('C')])).resolves.toMatchObject({ nextRevision: 2n });
      await expect(store.appendToStream(s, 'any', [event('D')])).resolves.toMatchObject({ nextRevision: 3n });
      expect((await store.readStream(s)).map((e) => e.type)).toEqual(['A', 'B', 'C', 'D']);
    });

    it('lets exactly one of many concurrent appenders win each revision', async () => {
      const s = stream('contended');
      await store.appendToStream(s, 'no_stream', [event('Created')]);
      for (let revision = 0n; revision < 10n; revision++) {
        const outcomes = await Promise.allSettled(
          Array.from({ length: 8 }, (_, writer) => store.appendToStream(s, revision, [event('Claimed', { writer })])),
        );
        const won = outcomes.filter((o) => o.status === 'fulfilled');
        const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
        expect(won).toHaveLength(1);
        expect(lost).toHaveLength(7);
        for (const loss of lost) expect(loss.reason).toBeInstanceOf(WrongExpectedRevisionError);
      }
      const events = await store.readStream(s);
      expect(events.map((e) => e.revision)).toEqual(Array.from({ length: 11 }, (_, i) => BigInt(i)));
    });

    it('appends to several streams all or nothing', async () => {
      const results = await store.appendToStreams([
        { streamId: stream('a'), expected: 'no_stream', events: [event('A1'), event('A2')] },
        { streamId: stream('b'), expected: 'no_stream', events: [event('B1')] },
      ]);
      expect(results.map((r) => [r.streamId, r.nextRevision])).toEqual([
        [stream('a'), 1n],
        [stream('b'), 0n],
      ]);
      await expect(
        store.appendToStreams([
          { streamId: stream('c'), expected: 'no_stream', events: [event('C1')] },
          { streamId: stream('a'), expected: 0n, events: [event('A3')] },
        ]),
      ).rejects.toMatchObject({ code: 'wrong-expected-revision', streamId: stream('a') });
      expect(await store.readStream(stream('c'))).toEqual([]);
      expect((await store.readStream(stream('a'))).map((e) => e.type)).toEqual(['A1', 'A2']);
    });

    it('treats a retried append with the same event ids as a success, not a duplicate', async () => {
      const events = [event('RunLeased', { n: 1 }, randomUUID()), event('RunSucceeded', { n: 2 }, randomUUID())];
      const first = await store.appendToStream(stream('retry'), 'no_stream', events);
      const retried = await store.appendToStream(stream('retry'), 'no_stream', events);
      expect(retried).toEqual(first);
      expect(await store.readStream(stream('retry'))).toHaveLength(2);
    });

    it('begins streams whose ids were made for the append (new_stream) beside one it continues', async () => {
      const continued = stream('continued');
      await store.appendToStream(continued, 'no_stream', [event('C0')]);
      const [made, other, next] = await store.appendToStreams([
        { streamId: stream('made'), expected: 'new_stream', events: [event('M0'), event('M1')] },
        { streamId: stream('made-too'), expected: 'new_stream', events: [event('T0')] },
        { streamId: continued, expected: 0n, events: [event('C1')] },
      ]);
      expect([made!.nextRevision, other!.nextRevision, next!.nextRevision]).toEqual([1n, 0n, 1n]);
      expect((await store.readStream(stream('made'))).map((e) => [e.type, e.revision])).toEqual([
        ['M0', 0n],
        ['M1', 1n],
      ]);
      await store.appendToStream(stream('made'), 1n, [event('M2')]);
      expect((await store.readStream(stream('made'))).map((e) => e.type)).toEqual(['M0', 'M1', 'M2']);
    });

    it('reads a stream forwards and backwards, from a revision, a page, and as of a time', async () => {
      const s = stream('history');
      await store.appendToStream(s, 'no_stream', [event('E0'), event('E1'), event('E2')]);
      await sleep(20);
      await store.appendToStream(s, 2n, [event('E3'), event('E4')]);
      // The store's own clock, so the test holds whatever the skew to this process.
      const between = (await store.readStream(s))[2]!.recordedAt;
      const types = (events: readonly RecordedEvent[]): string[] => events.map((e) => e.type);
      expect(types(await store.readStream(s, { fromRevision: 2n, maxCount: 2 }))).toEqual(['E2', 'E3']);
      expect(types(await store.readStream(s, { direction: 'backwards', maxCount: 2 }))).toEqual(['E4', 'E3']);
      expect(types(await store.readStream(s, { direction: 'backwards', fromRevision: 1n }))).toEqual(['E1', 'E0']);
      expect(types(await store.readStream(s, { until: between }))).toEqual(['E0', 'E1', 'E2']);
      expect(types(await store.readStream(s, { direction: 'backwards', until: between, maxCount: 1 }))).toEqual(['E2']);
      expect(await store.readStream(stream('never-written'))).toEqual([]);
    });

    it('reads many streams at once, each whole and in order, an unknown one as empty', async () => {
      await store.appendToStreams([
        { streamId: stream('a'), expected: 'no_stream', events: [event('A0'), event('A1')] },
        { streamId: stream('b'), expected: 'no_stream', events: [event('B0')] },
      ]);
      await store.appendToStream(stream('a'), 1n, [event('A2')]);
      const read = await store.readStreams([stream('b'), stream('a'), stream('never-written'), stream('a')]);
      expect([...read.keys()].sort()).toEqual([stream('a'), stream('b'), stream('never-written')].sort());
      expect(read.get(stream('a'))!.map((e) => [e.type, e.revision])).toEqual([
        ['A0', 0n],
        ['A1', 1n],
        ['A2', 2n],
      ]);
      expect(read.get(stream('b'))!.map((e) => e.streamId)).toEqual([stream('b')]);
      expect(read.get(stream('never-written'))).toEqual([]);
      expect((await store.readStreams([])).size).toBe(0);
    });

    it('reads particular events by stream and revision, in the order asked, leaving out those it lacks', async () => {
      await store.appendToStream(stream('p'), 'no_stream', [event('P0'), event('P1'), event('P2')]);
      await store.appendToStream(stream('q'), 'no_stream', [event('Q0')]);
      const read = await store.readEvents([
        { streamId: stream('p'), revision: 2n },
        { streamId: stream('q'), revision: 0n },
        { streamId: stream('p'), revision: 7n },
        { streamId: stream('never-written'), revision: 0n },
        { streamId: stream('p'), revision: 0n },
      ]);
      expect(read.map((e) => [e.streamId, e.type, e.revision])).toEqual([
        [stream('p'), 'P2', 2n],
        [stream('q'), 'Q0', 0n],
        [stream('p'), 'P0', 0n],
      ]);
      expect(await store.readEvents([])).toEqual([]);
    });

    it('reads the global log in order and continues exactly after a position', async () => {
      for (let i = 0; i < 5; i++) {
        await store.appendToStreams([
          { streamId: stream('x'), expected: 'any', events: [event('X', { i })] },
          { streamId: stream('y'), expected: 'any', events: [event('Y', { i })] },
        ]);
      }
      const all = await readMine(START, 10);
      expect(all.map((e) => `${e.type}${(e.data as { i: number }).i}`)).toEqual([
        'X0',
        'Y0',
        'X1',
        'Y1',
        'X2',
        'Y2',
        'X3',
        'Y3',
        'X4',
        'Y4',
      ]);
      for (let i = 1; i < all.length; i++)
        expect(comparePositions(all[i - 1]!.position, all[i]!.position)).toBeLessThan(0);
      const rest = await readMine(all[3]!.position, 6);
      expect(rest.map((e) => e.id)).toEqual(all.slice(4).map((e) => e.id));
      const page = await store.readAll({ from: all[0]!.position, maxCount: 2 });
      expect(page).toHaveLength(2);
    });

    it('finds events by stream prefix, team, actor, type, stream and time, newest first, a page after another', async () => {
      const team = (name: string, actor: string) => ({ team: name, actor, schemaVersion: 1 });
      await store.appendToStream(stream('a'), 'no_stream', [
        { type: 'RunScheduled', data: {}, metadata: team('billing', 'team:billing') },
        { type: 'RunLeased', data: {}, metadata: team('billing', 'worker:billing:w1') },
      ]);
      await store.appendToStream(stream('b'), 'no_stream', [
        { type: 'RunScheduled', data: {}, metadata: team('search', 'team:search') },
      ]);
      await store.appendToStream(stream('a'), 1n, [
        { type: 'RunSucceeded', data: {}, metadata: team('billing', 'worker:billing:w1') },
      ]);
      const mineOnly = { streamPrefix: `${prefix}-`, maxCount: 10 };
      const seen = (events: readonly RecordedEvent[]) =>
        events.map((e) => `${e.streamId.slice(prefix.length + 1)}@${e.revision}`);
      expect(seen(await store.findEvents(mineOnly))).toEqual(['a@2', 'b@0', 'a@1', 'a@0']);
      expect(seen(await store.findEvents({ ...mineOnly, team: 'billing' }))).toEqual(['a@2', 'a@1', 'a@0']);
      expect(seen(await store.findEvents({ ...mineOnly, actor: 'worker:billing:w1' }))).toEqual(['a@2', 'a@1']);
      expect(seen(await store.findEvents({ ...mineOnly, type: 'RunScheduled' }))).toEqual(['b@0', 'a@0']);
      expect(seen(await store.findEvents({ streamId: stream('b'), maxCount: 10 }))).toEqual(['b@0']);
      expect(await store.findEvents({ ...mineOnly, team: 'nobody' })).toEqual([]);
      // A page, then the next after its last event's position.
      const first = await store.findEvents({ ...mineOnly, team: 'billing', maxCount: 2 });
      expect(seen(first)).toEqual(['a@2', 'a@1']);
      const next = await store.findEvents({ ...mineOnly, team: 'billing', before: first[1]!.position });
      expect(seen(next)).toEqual(['a@0']);
      const all = await store.findEvents(mineOnly);
      const newest = all[0]!.recordedAt;
      expect(seen(await store.findEvents({ ...mineOnly, until: new Date(newest.getTime() + 1) })).length).toBe(4);
      expect(seen(await store.findEvents({ ...mineOnly, since: new Date(newest.getTime() + 1) }))).toEqual([]);
    });

    it('counts the events after a position, up to a limit: how far a reader there is behind the head', async () => {
      await store.appendToStreams([
        { streamId: stream('x'), expected: 'no_stream', events: [event('X0'), event('X1')] },
        { streamId: stream('y'), expected: 'no_stream', events: [event('Y0')] },
      ]);
      await store.appendToStream(stream('x'), 1n, [event('X2'), event('X3')]);
      const all = await readMine(START, 5);
      expect(all.map((e) => e.type)).toEqual(['X0', 'X1', 'Y0', 'X2', 'X3']);
      expect(await store.countEventsAfter(all[0]!.position, 100)).toBe(4);
      expect(await store.countEventsAfter(all[2]!.position, 100)).toBe(2);
      expect(await store.countEventsAfter(all[0]!.position, 3)).toBe(3);
      expect(await store.countEventsAfter(all[4]!.position, 100)).toBe(0);
    });

    it('never lets a reader of the global log skip an event under concurrent writers', async () => {
      const writers = 8;
      const appendsPerWriter = 24;
      let writing = true;
      const seen: RecordedEvent[] = [];
      const expected = writers * appendsPerWriter * 1.5;
      const start = await lastPosition(store);
      const reader = (async () => {
        let from = start;
        const deadline = Date.now() + 30_000;
        while (writing || seen.length < expected) {
          if (Date.now() > deadline) throw new Error(`reader saw ${seen.length} of ${expected} events`);
          const batch = await store.readAll({ from, maxCount: 200 });
          seen.push(...mine(batch));
          if (batch.length > 0) from = batch[batch.length - 1]!.position;
          else await sleep(5);
        }
      })();
      await Promise.all(
        Array.from({ length: writers }, async (_, w) => {
          for (let i = 0; i < appendsPerWriter; i++) {
            // Half the appends share streams, half touch two streams at once.
            if (i % 2 === 0) await store.appendToStream(stream(`shared-${i % 3}`), 'any', [event('S', { w, i })]);
            else
              await store.appendToStreams([
                { streamId: stream(`own-${w}`), expected: 'any', events: [event('O', { w, i })] },
                { streamId: stream(`pair-${w % 2}`), expected: 'any', events: [event('P', { w, i })] },
              ]);
          }
        }),
      ).finally(() => {
        writing = false;
      });
      await reader;
      const written = await readMine(START, expected);
      expect(written).toHaveLength(expected);
      expect(seen.map((e) => e.id)).toEqual(written.map((e) => e.id));
      const lastRevision = new Map<string, bigint>();
      for (const e of seen) {
        expect(e.revision).toBe((lastRevision.get(e.streamId) ?? -1n) + 1n);
        lastRevision.set(e.streamId, e.revision);
      }
    });

    it('stores a 256 KB event intact', async () => {
      const blob = 'x'.repeat(256 * 1024 - 64);
      await store.appendToStream(stream('big'), 'no_stream', [event('Big', { blob })]);
      const [read] = await store.readStream(stream('big'));
      expect((read?.data as { blob: string }).blob).toBe(blob);
    });

    it('keeps unicode in stream ids, types, data and metadata', async () => {
      const text = 'Zürich 東京 مرحبا 🚀👩🏽‍💻 é (e\u0301) \u2028 "quotes" \\ back';
      const s = stream(`unicode-日本-🚀`);
      await store.appendToStream(s, 'no_stream', [
        { type: 'Ünïcödé', data: { text, nested: [text] }, metadata: { actor: text } },
      ]);
      const [read] = await store.readStream(s);
      expect(read).toMatchObject({
        streamId: s,
        type: 'Ünïcödé',
        data: { text, nested: [text] },
        metadata: { actor: text },
      });
    });

    it('delivers history then live events to a catch-up subscription, and resumes from a checkpoint', async () => {
      const s = stream('sub');
      const start = await lastPosition(store);
      await store.appendToStream(s, 'no_stream', [event('H0'), event('H1')]);
      const abort = new AbortController();
      const received: RecordedEvent[] = [];
      const consumer = (async () => {
        for await (const batch of store.subscribeToAll({ from: start, batchSize: 10, signal: abort.signal })) {
          received.push(...mine(batch));
          if (received.length >= 4) abort.abort();
        }
      })();
      await waitFor(() => received.length >= 2);
      await store.appendToStream(s, 1n, [event('L2'), event('L3')]);
      await consumer;
      expect(received.map((e) => e.type)).toEqual(['H0', 'H1', 'L2', 'L3']);

      const resumed: RecordedEvent[] = [];
      const again = new AbortController();
      for await (const batch of store.subscribeToAll({ from: received[1]!.position, signal: again.signal })) {
        resumed.push(...mine(batch));
        if (resumed.length >= 2) again.abort();
      }
      expect(resumed.map((e) => e.type)).toEqual(['L2', 'L3']);
    });

    it('expires only streams that end and are over, each whole, and the global log reads on for the rest', async () => {
      const ending = (name: string): string => runStreamId(`${prefix}-${name}`);
      const from = await lastPosition(store);
      await store.appendToStreams([
        { streamId: ending('over'), expected: 'no_stream', events: [{ type: 'RunScheduled', data: {} }] },
        { streamId: ending('live'), expected: 'no_stream', events: [{ type: 'RunScheduled', data: {} }] },
        { streamId: stream('job'), expected: 'no_stream', events: [{ type: 'JobDefined', data: {} }] },
      ]);
      await store.appendToStream(ending('over'), 0n, [{ type: 'RunSucceeded', data: {} }]);
      const ours = (all: readonly RecordedEvent[]): RecordedEvent[] =>
        all.filter((e) => e.streamId.startsWith(prefix) || e.streamId.startsWith(ending('')));
      // The global log shows an append once every commit before it is visible (not at once on every store).
      const logBefore = await readUntil(store, from, ours, 4);
      const asked: string[] = [];
      const report = await store.expireStreams({
        streamPrefix: RUN_STREAM_PREFIX,
        before: new Date(Date.now() + 3_600_000),
        over: async (ids) => {
          asked.push(...ids);
          return new Set(ids.filter((id) => id === ending('over')));
        },
      });
      // Only streams that end are asked about; a stream that is not over, or does not end, stays as it was.
      expect(asked.every((id) => id.startsWith(RUN_STREAM_PREFIX))).toBe(true);
      expect((await store.readStream(ending('live'))).map((e) => e.type)).toEqual(['RunScheduled']);
      expect((await store.readStream(stream('job'))).map((e) => e.type)).toEqual(['JobDefined']);
      // The one that is over: gone whole, or (PostgreSQL: its week is not past) whole still.
      const over = (await store.readStream(ending('over'))).map((e) => e.type);
      expect([[], ['RunScheduled', 'RunSucceeded']]).toContainEqual(over);
      expect(report.expiredStreams).toBeGreaterThanOrEqual(over.length === 0 ? 1 : 0);
      const logAfter = ours(await readWholeLog(store, from));
      expect(logAfter.map((e) => [e.streamId, e.revision, e.position])).toEqual(
        logBefore
          .filter((e) => over.length > 0 || e.streamId !== ending('over'))
          .map((e) => [e.streamId, e.revision, e.position]),
      );
      await store.appendToStream(ending('live'), 0n, [{ type: 'RunLeased', data: {} }]);
      expect((await store.readStream(ending('live'))).map((e) => e.revision)).toEqual([0n, 1n]);
    });

    it('takes streams from another log as they were recorded, going on from their heads, and removes them whole', async () => {
      const moved = runStreamId(`${prefix}-moved`);
      const taken = (revision: number, type: string, at: string): RecordedEvent => ({
        id: randomUUID(),
        streamId: moved,
        revision: BigInt(revision),
        position: START,
        type,
        data: { attempt: revision, note: 'é' },
        metadata: { actor: 'worker:w-1', schemaVersion: 2 },
        recordedAt: new Date(at),
      });
      const first = [
        taken(0, 'RunScheduled', '2026-03-02T10:00:00.123Z'),
        taken(1, 'RunLeased', '2026-03-02T10:00:01Z'),
      ];
      if (store.kind === 'kurrentdb') {
        await expect(store.importEvents(first)).rejects.toMatchObject({ code: 'unsupported' });
        await expect(store.removeStreams([moved])).rejects.toMatchObject({ code: 'unsupported' });
        return;
      }
      const from = await lastPosition(store);
      await store.importEvents(first);
      const next = taken(2, 'RunSucceeded', '2026-03-02T10:00:02Z');
      // A gap or a revision taken already is refused, and writes nothing.
      await expect(store.importEvents([taken(3, 'RunFailed', '2026-03-02T10:00:03Z')])).rejects.toMatchObject({
        code: 'invalid-append',
      });
      await expect(store.importEvents([{ ...next, revision: 1n }])).rejects.toMatchObject({ code: 'invalid-append' });
      const lastTaken = await store.importEvents([next]);
      const read = await store.readStream(moved);
      expect(
        read.map(({ id, streamId, revision, type, data, metadata, recordedAt }) => ({
          id,
          streamId,
          revision,
          type,
          data,
          metadata,
          recordedAt,
        })),
      ).toEqual([...first, next].map(({ position: _, ...rest }) => rest));
      // In the global log too, in the order taken.
      expect(
        (await readUntil(store, from, (all) => all.filter((e) => e.streamId === moved), 3)).map((e) => e.id),
      ).toEqual(read.map((e) => e.id));
      expect(lastTaken).toEqual(read.at(-1)!.position);
      // The stream goes on here as any other.
      await store.appendToStream(moved, 2n, [{ type: 'RunReplayed', data: {} }]);
      expect(await store.removeStreams([moved])).toBe(4);
      expect(await store.readStream(moved)).toEqual([]);
    });

    it('answers a ping', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });

    describe('units of work (appends beside the read models)', () => {
      const rowsOf = async (ids: readonly string[]): Promise<string[]> =>
        (
          await fixture.readModels.query<{ id: string }>('SELECT id FROM uow_probe WHERE id = ANY($1) ORDER BY id', [
            ids,
          ])
        ).rows.map((r) => r.id);
      beforeAll(() => fixture.readModels.query('CREATE TABLE IF NOT EXISTS uow_probe (id text PRIMARY KEY)'));

      it('appends to many streams and writes the rows, both there once it resolves', async () => {
        const [a, b] = [stream('a'), stream('b')];
        const atomic = await store.unitOfWork(fixture.readModels, async (uow) => {
          const results = await uow.append([
            { streamId: a, expected: 'no_stream', events: [event('A1'), event('A2')] },
            { streamId: b, expected: 'no_stream', events: [event('B1')] },
          ]);
          expect(results.map((r) => [r.streamId, r.nextRevision])).toEqual([
            [a, 1n],
            [b, 0n],
          ]);
          await uow.tx.query('INSERT INTO uow_probe (id) VALUES ($1), ($2)', [a, b]);
          return uow.atomic;
        });
        expect(atomic).toBe(fixture.atomic);
        expect((await store.readStream(a)).map((e) => e.type)).toEqual(['A1', 'A2']);
        expect((await store.readStream(b)).map((e) => e.type)).toEqual(['B1']);
        expect(await rowsOf([a, b])).toEqual([a, b].sort());
      });

      it('writes no row when it throws after its append; the append stays only when it committed on its own', async () => {
        const s = stream('failing');
        await expect(
          store.unitOfWork(fixture.readModels, async (uow) => {
            await uow.append([{ streamId: s, expected: 'no_stream', events: [event('Appended')] }]);
            await uow.tx.query('INSERT INTO uow_probe (id) VALUES ($1)', [s]);
            throw new Error('the decision failed after its append');
          }),
        ).rejects.toThrow('the decision failed after its append');
        expect(await rowsOf([s])).toEqual([]);
        expect((await store.readStream(s)).map((e) => e.type)).toEqual(fixture.atomic ? [] : ['Appended']);
      });

      it('tells onCommittedAppend of each append that committed on its own, before its write-through; never of an atomic one', async () => {
        const s = stream('heard');
        const heard: Array<[string, bigint]> = [];
        await expect(
          store.unitOfWork(
            fixture.readModels,
            async (uow) => {
              await uow.append([{ streamId: s, expected: 'no_stream', events: [event('A1'), event('A2')] }], {
                // A write that fails: the key may not be null.
                text: 'INSERT INTO uow_probe (id) VALUES (NULL)',
                values: [],
              });
            },
            {
              onCommittedAppend: (results) =>
                heard.push(...results.map((r): [string, bigint] => [r.streamId, r.nextRevision])),
            },
          ),
        ).rejects.toThrow();
        // The write-through failed: what committed on its own stays in the log, and the caller heard of it.
        expect(heard).toEqual(fixture.atomic ? [] : [[s, 1n]]);
        expect((await store.readStream(s)).map((e) => e.type)).toEqual(fixture.atomic ? [] : ['A1', 'A2']);
      });

      it('writes the rows that go with an append through writeThrough, once the append is in', async () => {
        const [a, b] = [stream('through-a'), stream('through-b')];
        await store.unitOfWork(fixture.readModels, (uow) =>
          uow.append([{ streamId: a, expected: 'no_stream', events: [event('A1')] }], {
            name: 'uow_probe_insert',
            text: 'INSERT INTO uow_probe (id) SELECT unnest($1::text[])',
            values: [[a, b]],
          }),
        );
        expect((await store.readStream(a)).map((e) => e.type)).toEqual(['A1']);
        expect(await rowsOf([a, b])).toEqual([a, b].sort());
      });

      it('runs no writeThrough when its append is refused', async () => {
        const [fresh, moved] = [stream('through-fresh'), stream('through-moved')];
        await store.appendToStream(moved, 'no_stream', [event('First')]);
        const refusal = await store
          .unitOfWork(fixture.readModels, (uow) =>
            uow.append(
              [
                { streamId: fresh, expected: 'no_stream', events: [event('Never')] },
                { streamId: moved, expected: 'no_stream', events: [event('Stale')] },
              ],
              { text: 'INSERT INTO uow_probe (id) VALUES ($1)', values: [fresh] },
            ),
          )
          .catch((err: unknown) => err);
        expect(refusal).toBeInstanceOf(WrongExpectedRevisionError);
        expect(await store.readStream(fresh)).toEqual([]);
        expect(await rowsOf([fresh])).toEqual([]);
      });

      it('refuses a stale expected revision with the stream named, and writes nothing', async () => {
        const [fresh, moved] = [stream('fresh'), stream('moved')];
        await store.appendToStream(moved, 'no_stream', [event('First'), event('Second')]);
        const refusal = await store
          .unitOfWork(fixture.readModels, async (uow) => {
            await uow.append([
              { streamId: fresh, expected: 'no_stream', events: [event('Never')] },
              { streamId: moved, expected: 0n, events: [event('Stale')] },
            ]);
            await uow.tx.query('INSERT INTO uow_probe (id) VALUES ($1)', [fresh]);
          })
          .catch((err: unknown) => err);
        expect(refusal).toBeInstanceOf(WrongExpectedRevisionError);
        expect((refusal as WrongExpectedRevisionError).streamId).toBe(moved);
        expect(await store.readStream(fresh)).toEqual([]);
        expect((await store.readStream(moved)).map((e) => e.type)).toEqual(['First', 'Second']);
        expect(await rowsOf([fresh])).toEqual([]);
      });
    });
  });
}

function event(
  type: string,
  data: Record<string, unknown> = {},
  id?: string,
): { id?: string; type: string; data: Record<string, unknown> } {
  return id === undefined ? { type, data } : { id, type, data };
}

async function readWholeLog(store: EventStore, from: LogPosition): Promise<RecordedEvent[]> {
  const all: RecordedEvent[] = [];
  let position = from;
  while (true) {
    const batch = await store.readAll({ from: position, maxCount: 1000 });
    if (batch.length === 0) return all;
    all.push(...batch);
    position = batch[batch.length - 1]!.position;
  }
}

/**
 * The global log holds back events while an older transaction anywhere on the
 * server is open (that is the gap-free rule), so wait for what this test wrote.
 */
async function readUntil(
  store: EventStore,
  from: LogPosition,
  filter: (events: readonly RecordedEvent[]) => RecordedEvent[],
  count: number,
): Promise<RecordedEvent[]> {
  let events: RecordedEvent[] = [];
  await waitFor(async () => {
    events = filter(await readWholeLog(store, from));
    return events.length >= count;
  });
  return events;
}

async function lastPosition(store: EventStore): Promise<LogPosition> {
  const all = await readWholeLog(store, START);
  return all.length === 0 ? START : all[all.length - 1]!.position;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
