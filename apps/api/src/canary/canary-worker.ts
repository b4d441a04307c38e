import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { hostname } from 'node:os';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { CANARY_QUEUE, CANARY_TEAM, CompleteRuns, LeaseRuns, successesOf } from '@chronicle/commands';
import type { WorkerCaller } from '@chronicle/domain';
import { CONFIG, LOGGER, type Config, type JsonLogger } from '@chronicle/platform';

/** A lease request waits this long for the next canary run. */
const WAIT_SECONDS = 20;
/** After a failed round (the database away), the next. */
const RETRY_MS = 1000;

/**
 * The built-in canary worker of each API process (docs/operations.md, "Canaries"): leases the canary runs of every
 * shard as a team worker of the reserved team would, through the same claim, and completes each at
 * once with success. The scheduler node owning a shard checks that each minute's run did succeed.
 */
@Injectable()
export class CanaryWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly stop = new AbortController();
  private loop: Promise<void> = Promise.resolve();
  private readonly caller: WorkerCaller = {
    kind: 'worker',
    team: CANARY_TEAM,
    queues: [CANARY_QUEUE],
    tokenId: 'canary',
  };

  constructor(
    private readonly commands: CommandBus,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LOGGER) private readonly logger: JsonLogger,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.canaries) this.loop = this.run();
  }

  /** Before the lease handler stops (its polls then answer at once, and this loop would spin on them). */
  async onModuleDestroy(): Promise<void> {
    this.stop.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    const log = this.logger.child('canary-worker');
    const request = {
      queues: [CANARY_QUEUE],
      max: 100,
      leaseSeconds: 30,
      workerId: `canary@${hostname()}:${process.pid}`,
      waitSeconds: WAIT_SECONDS,
    };
    while (!this.stop.signal.aborted) {
      try {
        const leases = await this.commands.execute(new LeaseRuns(this.caller, request, this.stop.signal, true));
        if (leases.length === 0) {
          // A poll that answered at once (the process stopping) must not starve the event loop.
          await nextTurn();
          continue;
        }
        await this.commands.execute(new CompleteRuns(this.caller, successesOf(leases)));
      } catch (err) {
        if (this.stop.signal.aborted) break;
        log.warn('canary round failed; trying again', { err });
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
  }
}
