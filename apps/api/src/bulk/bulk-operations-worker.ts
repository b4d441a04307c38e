import { Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { BulkOperationRunner } from '@chronicle/commands';

/**
 * Bulk operations run in the API processes (docs/api.md, "Bulk operations"): each takes up the operations
 * no live process holds, and lets go of its own as it stops, after their batch under way.
 */
@Injectable()
export class BulkOperationsWorker implements OnApplicationBootstrap, OnModuleDestroy {
  constructor(private readonly runner: BulkOperationRunner) {}

  onApplicationBootstrap(): void {
    this.runner.start();
  }

  async onModuleDestroy(): Promise<void> {
    await this.runner.stop();
  }
}
