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
      const server =
        connectionString !== undefined
          ? { url: connectionString, stop: async () => undefined }
          : await startContainer();
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

async function startContainer(): Promise<{ url: string; stop: () => Promise<unknown> }> {
  const { KurrentDbContainer } = await import('@testcontainers/kurrentdb');
  const container = await new KurrentDbContainer(KURRENTDB_IMAGE).start();
  return { url: container.getConnectionString(), stop: () => container.stop() };
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
