import { ApiModule } from '@chronicle/api';
import { createTestDatabase } from '@chronicle/testing';
import { dispatchPolicySuite } from './support/dispatch-policy.suite';
import { startApp } from './support/start-app';

/** The dispatch policy with every run in one database, as without a shard map. */
dispatchPolicySuite('dispatch policy', {
  flood: 100_000,
  start: async (adminToken) => {
    const db = await createTestDatabase();
    const app = await startApp(db.pool, db.eventStore, [ApiModule], adminToken);
    return {
      app,
      readModels: [db.pool],
      logs: [db.log],
      close: async () => {
        await app.close();
        await db.drop();
      },
    };
  },
});
