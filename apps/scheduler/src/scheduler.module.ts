import { Module } from '@nestjs/common';
import { SchedulerService } from './scheduler.service';

/** The scheduler role: materialises cron runs 60 s ahead and reaps expired leases (DESIGN.md, Processes). */
@Module({ providers: [SchedulerService] })
export class SchedulerModule {}
