import { Module } from '@nestjs/common';
import { RunReservationsModule } from '@chronicle/commands';
import { SchedulerService } from './scheduler.service';

/** The scheduler role: materialises cron runs 60 s ahead and reaps expired leases (DESIGN.md, Processes). */
@Module({ imports: [RunReservationsModule], providers: [SchedulerService] })
export class SchedulerModule {}
