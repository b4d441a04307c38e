import { Module } from '@nestjs/common';

/**
 * The scheduler role: for the shards it owns, materialise due cron/rrule runs
 * and reap expired leases (see DESIGN.md, Processes).
 */
@Module({})
export class SchedulerModule {}
