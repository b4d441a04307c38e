import { Module, type DynamicModule, type INestApplication, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import helmet from 'helmet';
import type { NestExpressApplication } from '@nestjs/platform-express';
import {
  ConfigError,
  createMetricsRegistry,
  loadConfig,
  createLogger,
  startTracing,
  type Config,
  type JsonLogger,
  type Tracing,
} from '@chronicle/platform';
import { HealthController } from './health.controller';
import { httpMetrics } from './http-metrics';
import { MetricsController } from './metrics.controller';
import { requestLogging } from './request-logging';
import { startRuntime, type Runtime } from './runtime';
import { RuntimeModule } from './runtime.module';
import { StartupError } from './startup-error';

/** The Nest modules of some roles. */
export type RoleModules = ReadonlyArray<Type | DynamicModule>;

export interface ProcessDefinition {
  /** Names the process in logs and in pg_stat_activity. */
  readonly name: string;
  /** The roles this process runs: the API, the scheduler, the projector, or some of them (by its settings). */
  readonly modules: RoleModules | ((config: Config) => RoleModules);
  /** Set the app up before it listens (the API adds its OpenAPI document). */
  readonly configure?: (app: INestApplication, config: Config) => void;
}

const SHUTDOWN_DEADLINE_MS = 15_000;
const REPEATED_SIGNAL_GRACE_MS = 2_000;

/**
 * Start one process: configuration, database (embedded when DATABASE_URL is
 * unset), migrations, event store, then Nest with the given roles and
 * /healthz on PORT. SIGTERM or Ctrl-C drain the app, then stop the database.
 */
export async function runProcess(definition: ProcessDefinition): Promise<void> {
  let runtime: Runtime | undefined;
  try {
    const config = loadConfig();
    const logger = createLogger({ level: config.logLevel, name: definition.name });
    // Traces (docs/operations.md, "Traces"): only where the environment names an OTLP endpoint.
    const tracing = startTracing(`chronicle-${definition.name}`);
    if (tracing !== null) logger.info('sending traces over OTLP');
    runtime = await startRuntime(config, logger, `scheduler-${definition.name}`);
    const modules = typeof definition.modules === 'function' ? definition.modules(config) : definition.modules;
    const app = await createApp(runtime, modules, logger);
    definition.configure?.(app, config);
    await listen(app, config.port);
    logger.info('ready', {
      port: config.port,
      roles: typeof definition.modules === 'function' ? config.roles.join(',') : definition.name,
      eventStore: runtime.eventStore.kind,
      embeddedDatabase: config.databaseUrl === undefined,
    });
    stopOnSignals(app, runtime, logger, tracing);
  } catch (err) {
    await runtime?.close().catch(() => undefined);
    exitWithOneLine(err);
  }
}

/**
 * The Nest application of a process: its roles, the runtime's parts, /healthz and /metrics (a registry
 * of the app's own). Tests start it too.
 */
export async function createApp(
  runtime: Runtime,
  modules: RoleModules,
  logger: JsonLogger = runtime.logger,
): Promise<INestApplication> {
  const registry = createMetricsRegistry();
  @Module({
    imports: [RuntimeModule.forRoot(runtime, registry), ...modules],
    controllers: [HealthController, MetricsController],
  })
  class ProcessModule {}
  const app = await NestFactory.create<NestExpressApplication>(ProcessModule, {
    logger,
    abortOnError: false,
    bodyParser: false, // a role that takes bodies parses them, with its own limits (the API: configureApi)
  });
  // Security headers on every answer (nosniff, no framing, no referrer, ...). The content security
  // policy is the dashboard's own (its controller sets it); the API answers JSON, Swagger UI its page.
  app.use(helmet({ contentSecurityPolicy: false }));
  // Cross-origin calls only from the origins configured (CORS_ORIGINS); none by default.
  if (runtime.config.corsOrigins.length > 0)
    app.enableCors({
      origin: [...runtime.config.corsOrigins],
      allowedHeaders: ['authorization', 'content-type', 'x-request-id', 'traceparent', 'tracestate'],
    });
  app.use(requestLogging(logger));
  app.use(httpMetrics(registry));
  return app;
}

async function listen(app: INestApplication, port: number): Promise<void> {
  try {
    await app.listen(port);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE')
      throw new StartupError(`port ${port} is already in use; set PORT to a free port`);
    throw err;
  }
}

function stopOnSignals(app: INestApplication, runtime: Runtime, logger: JsonLogger, tracing: Tracing | null): void {
  let stoppingSince: number | undefined;
  const stop = (signal: NodeJS.Signals): void => {
    if (stoppingSince !== undefined) {
      // `npm start` forwards the signal its process group already got: the
      // same stop request twice. Only a later one (Ctrl-C again) forces exit.
      if (Date.now() - stoppingSince < REPEATED_SIGNAL_GRACE_MS) return;
      logger.warn('second signal: exiting now', { signal });
      process.exit(1);
    }
    stoppingSince = Date.now();
    logger.info('stopping', { signal });
    setTimeout(() => {
      logger.error('shutdown took too long; exiting');
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS).unref();
    void (async () => {
      await app.close().catch((err: unknown) => logger.error('closing the app failed', err));
      await runtime.close().catch((err: unknown) => logger.error('closing the runtime failed', err));
      await tracing?.shutdown().catch((err: unknown) => logger.warn('sending the last traces failed', { err }));
      logger.info('stopped');
      process.exit(0);
    })();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

/** A failed start says what to fix in one line, never just a stack trace. */
function exitWithOneLine(err: unknown): never {
  const known = err instanceof ConfigError || err instanceof StartupError;
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`scheduler: cannot start: ${message}\n`);
  if (!known && err instanceof Error && process.env['LOG_LEVEL'] === 'debug')
    process.stderr.write(`${err.stack ?? ''}\n`);
  process.exit(1);
}
