import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { startEmbeddedPostgres, type EmbeddedPostgresOptions } from './embedded-postgres';

/** A PostgreSQL server to make scratch databases on. */
export interface ScratchServer {
  /** Its admin connection string. */
  readonly url: string;
  /** An embedded server of its own (false: DATABASE_URL's). */
  readonly embedded: boolean;
  /** Stops and deletes an embedded server; leaves DATABASE_URL's as it was. */
  stop(): Promise<void>;
}

/**
 * DATABASE_URL's server when it is set; otherwise a throw-away embedded PostgreSQL in a new folder
 * under the system's temporary one (`prefix` names it), deleted by stop(). For the tests, the bench
 * and the schema snapshot. Imports nothing by package name: jest's global setup loads it by path.
 */
export async function openScratchServer(
  prefix: string,
  options: Pick<EmbeddedPostgresOptions, 'unsafeFast' | 'settings'> = {},
): Promise<ScratchServer> {
  const given = process.env['DATABASE_URL'];
  if (given !== undefined && given !== '') return { url: given, embedded: false, stop: async () => undefined };
  const dataDir = await mkdtemp(path.join(tmpdir(), prefix));
  await chmod(dataDir, 0o755); // as root the server runs as 'postgres', which must enter it
  const server = await startEmbeddedPostgres({ dataDir, ephemeral: true, ...options });
  return {
    url: server.connectionString,
    embedded: true,
    stop: async () => {
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
