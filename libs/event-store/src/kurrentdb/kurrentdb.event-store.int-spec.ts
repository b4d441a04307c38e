import { createTestDatabase, findKurrentDb, startKurrentDb } from '@chronicle/testing';
import { describeEventStoreContract } from '../testing/event-store.contract';
import { createKurrentDbEventStore } from './kurrentdb.event-store';

const { connectionString, dockerProblem } = findKurrentDb();

if (connectionString === undefined && dockerProblem !== undefined) {
  process.stdout.write(
    `KurrentDB contract suite skipped: KURRENTDB_CONNECTION_STRING is unset and Docker is unavailable (${dockerProblem})\n`,
  );
  // Shown as skipped in the report, with the reason in its name.
  describe.skip(`event store contract: kurrentdb (skipped: no KURRENTDB_CONNECTION_STRING, no Docker: ${dockerProblem})`, () => {
    it('runs when a KurrentDB server is reachable', () => undefined);
  });
} else {
  describeEventStoreContract(
    connectionString !== undefined ? 'kurrentdb (KURRENTDB_CONNECTION_STRING)' : 'kurrentdb (testcontainers)',
    async () => {
      // The read models the units of work run beside: PostgreSQL, as in production.
      const readModels = await createTestDatabase();
      const server = await startKurrentDb(connectionString);
      const store = await createKurrentDbEventStore(server.url);
      return {
        store,
        readModels: readModels.pool,
        atomic: false,
        teardown: async () => {
          await store.close();
          await server.stop();
          await readModels.drop();
        },
      };
    },
  );
}
