import { createTestDatabase } from '@chronicle/testing';
import { describeEventStoreContract } from '../testing/event-store.contract';
import { InMemoryEventStore } from './in-memory.event-store';

// An int-spec for the units of work alone: they run beside a real read-model database.
describeEventStoreContract('in-memory', async () => {
  const store = new InMemoryEventStore();
  const readModels = await createTestDatabase();
  return {
    store,
    readModels: readModels.pool,
    atomic: false,
    teardown: async () => {
      await store.close();
      await readModels.drop();
    },
  };
});
