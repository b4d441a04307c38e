import { ApiModule } from '@chronicle/api';
import { ProjectorModule } from '@chronicle/projector';
import { createTestDatabase, type TestDatabase } from '@chronicle/testing';
import { startApp, type RunningApp } from './start-app';
import { createTeam, type TeamClients } from './team-tokens';

/** Two API processes on one fresh database, and a team `ops` granted the queue `ops`. */
export interface Replicas {
  readonly db: TestDatabase;
  /** The first, which runs the projector too. */
  readonly app: RunningApp;
  readonly second: RunningApp;
  readonly ops: TeamClients;
  close(): Promise<void>;
}

/** Two API processes on one database, as two replicas behind a load balancer: for rules that must hold across them. */
export async function startReplicas(adminToken: string): Promise<Replicas> {
  const db = await createTestDatabase();
  const app = await startApp(db.pool, db.eventStore, [ApiModule, ProjectorModule], adminToken);
  const second = await startApp(db.pool, db.eventStore, [ApiModule], adminToken);
  const ops = await createTeam(app.url, adminToken, 'ops', ['ops']);
  return {
    db,
    app,
    second,
    ops,
    close: async () => {
      await second.close();
      await app.close();
      await db.drop();
    },
  };
}
