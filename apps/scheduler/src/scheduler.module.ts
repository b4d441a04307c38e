import { Module } from '@nestjs/common';
import { SchedulerService } from './scheduler.service';

/**
 * The scheduler role: reaps expired leases (and, with the schedules work,
 * materialises cron and rrule runs; see DESIGN.md, Processes).
 */
@Module({ providers: [SchedulerService] })
export class SchedulerModule {}
