import { execFileSync } from 'node:child_process';
import { createTestDatabase } from '@chronicle/testing';
import { describeEventStoreContract } from '../testing/event-store.contract';
import { createKurrentDbEventStore } from './kurrentdb.event-store';

/** The server the contract runs against in Docker (KURRENTDB_IMAGE overrides): 25.1+ has multi-stream appends. */
const KURRENTDB_IMAGE = process.env['KURRENTDB_IMAGE'] ?? 'kurrentplatform/kurrentdb:25.1';

const connectionString = process.env['KURRENTDB_CONNECTION_STRING'];
const dockerProblem = connectionString === undefined ? whyNoDocker() : undefined;

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
      if (connectionString !== undefined) {
        const store = await createKurrentDbEventStore(connectionString);
        return {
          store,
          readModels: readModels.pool,
          atomic: false,
          teardown: async () => {
            await store.close();
            await readModels.drop();
          },
        };
      }
      const { KurrentDbContainer } = await import('@testcontainers/kurrentdb');
      const container = await new KurrentDbContainer(KURRENTDB_IMAGE).start();
      const store = await createKurrentDbEventStore(container.getConnectionString());
      return {
        store,
        readModels: readModels.pool,
        atomic: false,
        teardown: async () => {
          await store.close();
          await container.stop();
          await readModels.drop();
        },
      };
    },
  );
}

function whyNoDocker(): string | undefined {
  try {
    execFileSync('docker', ['version', '--format', '{{.Server.Version}}'], { stdio: 'pipe', timeout: 5000 });
    return undefined;
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    return (
      (stderr !== undefined && stderr !== '' ? stderr.split('\n')[0] : (err as Error).message) ?? 'docker not found'
    );
  }
}
