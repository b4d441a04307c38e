import { execFileSync } from 'node:child_process';

/** The server the KurrentDB tests run against in Docker (KURRENTDB_IMAGE overrides): 25.1+ has multi-stream appends. */
export const KURRENTDB_IMAGE = process.env['KURRENTDB_IMAGE'] ?? 'kurrentplatform/kurrentdb:25.1';

/**
 * Where the KurrentDB tests run, decided once per test file as it loads:
 * KURRENTDB_CONNECTION_STRING's server when set, else a container when
 * Docker answers. `dockerProblem` set: neither, and why Docker did not answer.
 */
export function findKurrentDb(): { connectionString: string | undefined; dockerProblem: string | undefined } {
  const connectionString = process.env['KURRENTDB_CONNECTION_STRING'];
  return { connectionString, dockerProblem: connectionString === undefined ? whyNoDocker() : undefined };
}

/** The server to use: the connection string's (left running), or a fresh container (stopped by `stop`). */
export async function startKurrentDb(
  connectionString: string | undefined,
): Promise<{ url: string; stop: () => Promise<unknown> }> {
  if (connectionString !== undefined) return { url: connectionString, stop: async () => undefined };
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
