import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Inject, Injectable } from '@nestjs/common';
import type { Registry } from 'prom-client';
import { BULK_STALE_SECONDS } from '@chronicle/domain';
import { CLOCK, LOGGER, METRICS_REGISTRY, PeriodicPass, type Clock, type JsonLogger } from '@chronicle/platform';
import { RunServers } from '../shards/run-servers';
import { ReadySignal } from '../workers/ready-signal';
import { BulkEngine } from './bulk-engine';
import { claimOperation, type BulkOperationRow } from './bulk-operations.sql';

/** How often an API process looks for operations no live process holds. */
const TAKE_UP_INTERVAL_MS = 2000;

/** This process as the holder of an operation: `host:pid#instance`, as shard leases name their owners. */
export function processOwner(): string {
  return `${hostname()}:${process.pid}#${randomBytes(2).toString('hex')}`;
}

/**
 * The API process's runner of bulk operations: each operation it starts runs in the background here,
 * and a periodic pass (started by the API, apps/api/src/bulk/bulk-operations-worker.ts) takes up those no
 * live process holds: resumed ones, and those of a process that died (a heartbeat older than
 * BULK_STALE_SECONDS). Stopping the process lets go of its operations after their batch, for another
 * process to go on with.
 */
@Injectable()
export class BulkOperationRunner {
  readonly engine: BulkEngine;
  private readonly running = new Map<string, Promise<void>>();
  private readonly stopping = new AbortController();
  private readonly log: JsonLogger;
  private pass: PeriodicPass | undefined;

  constructor(
    private readonly servers: RunServers,
    ready: ReadySignal,
    @Inject(CLOCK) clock: Clock,
    @Inject(LOGGER) logger: JsonLogger,
    @Inject(METRICS_REGISTRY) private readonly registry: Registry,
  ) {
    this.engine = new BulkEngine(servers, ready, clock, processOwner());
    this.log = logger.child('bulk-operations');
  }

  start(): void {
    this.pass ??= new PeriodicPass(
      {
        name: 'bulk-operations',
        intervalMs: TAKE_UP_INTERVAL_MS,
        jitter: 0.2,
        logger: this.log,
        registry: this.registry,
      },
      () => this.takeUp(),
    );
    this.pass.start();
  }

  /** No more taken up; the operations under way let go after their batch. */
  async stop(): Promise<void> {
    await this.pass?.stop();
    this.stopping.abort();
    await Promise.allSettled(this.running.values());
  }

  /** An operation this process holds, run in the background. */
  runInBackground(operation: BulkOperationRow): void {
    if (this.running.has(operation.id)) return;
    const run = this.engine
      .run(operation, undefined, this.stopping.signal)
      .then(() => undefined)
      .catch((err: unknown) => this.log.warn('bulk operation let go', { operationId: operation.id, err }))
      .finally(() => this.running.delete(operation.id));
    this.running.set(operation.id, run);
  }

  /** Takes up what is waiting now (after a resume), rather than at the next pass. */
  wake(): void {
    if (this.pass === undefined) return;
    this.takeUp().catch((err: unknown) => this.log.warn('taking up bulk operations failed', { err }));
  }

  /** Every operation no live process holds, each run here in the background. */
  private async takeUp(): Promise<void> {
    if (this.stopping.signal.aborted) return;
    for (;;) {
      const operation = await claimOperation(this.servers.controlServer.pool, this.engine.owner, BULK_STALE_SECONDS, [
        ...this.running.keys(),
      ]);
      if (operation === undefined) return;
      this.runInBackground(operation);
    }
  }
}
