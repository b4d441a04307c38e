import { Global, Module, type DynamicModule } from '@nestjs/common';
import type { Registry } from 'prom-client';
import {
  CLOCK,
  ADMIN_TOKEN_HASH,
  CONFIG,
  EVENT_STORE,
  LOGGER,
  METRICS_REGISTRY,
  PG_POOL,
  RUN_SERVER_DIRECTORY,
} from '@chronicle/platform';
import type { Runtime } from './runtime';

/** Hands the runtime's parts to Nest: the composition root is runProcess, not the container. */
@Global()
@Module({})
export class RuntimeModule {
  static forRoot(runtime: Runtime, metrics: Registry): DynamicModule {
    const providers = [
      { provide: CONFIG, useValue: runtime.config },
      { provide: LOGGER, useValue: runtime.logger },
      { provide: CLOCK, useValue: runtime.clock },
      { provide: PG_POOL, useValue: runtime.pool },
      { provide: EVENT_STORE, useValue: runtime.eventStore },
      { provide: RUN_SERVER_DIRECTORY, useValue: runtime.runServers },
      { provide: ADMIN_TOKEN_HASH, useValue: runtime.adminTokenHash ?? null },
      { provide: METRICS_REGISTRY, useValue: metrics },
    ];
    return { module: RuntimeModule, providers, exports: providers.map((p) => p.provide) };
  }
}
