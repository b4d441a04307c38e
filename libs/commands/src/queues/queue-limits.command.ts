import { Inject } from '@nestjs/common';
import { Command, CommandHandler, Query, QueryHandler, type ICommandHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { AdminEventType, PLATFORM_STREAM } from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import { EVENT_STORE, PG_POOL } from '@chronicle/platform';
import { recordAdminChange } from '../teams/admin-change';
import { ReadySignal } from '../workers/ready-signal';
import { findQueueLimits, writeQueueLimits, type QueueLimits } from './queue-limits.sql';

/** GET /v1/queues/{queue}/limits (admin). No cap: concurrency null; no rate: rate null. */
export class GetQueueLimits extends Query<QueueLimits> {
  constructor(readonly queue: string) {
    super();
  }
}

/** PUT /v1/queues/{queue}/limits (admin): the queue's cap and rate, each null for none. */
export class SetQueueLimits extends Command<QueueLimits> {
  constructor(
    readonly queue: string,
    readonly limits: QueueLimits,
    readonly actor: string,
  ) {
    super();
  }
}

@QueryHandler(GetQueueLimits)
export class GetQueueLimitsHandler implements IQueryHandler<GetQueueLimits> {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  async execute({ queue }: GetQueueLimits): Promise<QueueLimits> {
    return findQueueLimits(this.pool, queue);
  }
}

@CommandHandler(SetQueueLimits)
export class SetQueueLimitsHandler implements ICommandHandler<SetQueueLimits> {
  constructor(
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    private readonly ready: ReadySignal,
  ) {}

  async execute({ queue, limits, actor }: SetQueueLimits): Promise<QueueLimits> {
    await recordAdminChange(this.eventStore, this.pool, actor, {
      streamId: PLATFORM_STREAM,
      decide: async (tx) => {
        // The same limits again change nothing, and record nothing.
        const before = await findQueueLimits(tx, queue);
        if (JSON.stringify(before) === JSON.stringify(limits)) return { event: null, answer: undefined };
        return { event: { type: AdminEventType.QueueLimitsSet, data: { queue, ...limits } }, answer: undefined };
      },
      write: (tx) => writeQueueLimits(tx, queue, limits),
    });
    // A raised or removed cap lets waiting runs be leased: their workers are not left to their next poll.
    this.ready.notify();
    return limits;
  }
}
