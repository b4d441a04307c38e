import { describeEventStoreContract } from '../testing/event-store.contract';
import { InMemoryEventStore } from './in-memory.event-store';

describeEventStoreContract('in-memory', async () => {
  const store = new InMemoryEventStore();
  return { store, teardown: () => store.close() };
});
