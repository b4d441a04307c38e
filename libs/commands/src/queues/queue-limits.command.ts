import { Inject } from '@nestjs/common';
import { Command, CommandHandler, Query, QueryHandler, type ICommandHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { AdminEventType, PLATFORM_STREAM } from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import { EVENT_STORE, PG_POOL } from '@chronicle/platform';
import { recordAdminChange } from '../teams/admin-change';
import { ReadySignal } from '../workers/ready-signal';
import { findQueueCaps, writeQueueLimits, type QueueLimits } from './queue-limits.sql';

/** GET /v1/queues/{queue}/limits (admin). No cap: concurrency null. */
export class GetQueueLimits extends Query<QueueLimits> {
  constructor(readonly queue: string) {
    super();
  }
}

/** PUT /v1/queues/{queue}/limits (admin): the queue's cap, or null for none. */
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
    return { concurrency: (await findQueueCaps(this.pool, [queue])).get(queue) ?? null };
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
        // The same cap again changes nothing, and records nothing.
        const before = (await findQueueCaps(tx, [queue])).get(queue) ?? null;
        if (before === limits.concurrency) return { event: null, answer: undefined };
        return { event: { type: AdminEventType.QueueLimitsSet, data: { queue, ...limits } }, answer: undefined };
      },
      write: (tx) => writeQueueLimits(tx, queue, limits),
    });
    // A raised or removed cap lets waiting runs be leased: their workers are not left to their next poll.
    this.ready.notify();
    return limits;
  }
}
