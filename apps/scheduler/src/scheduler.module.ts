import { Module } from '@nestjs/common';
import { PayloadsModule, RunDecisionsModule, RunMetricsModule } from '@chronicle/commands';
import { SchedulerService } from './scheduler.service';

/**
 * The scheduler role: materialises cron runs 60 s ahead and reaps expired leases (docs/architecture.md, "Shards and
 * scheduler nodes").
 */
@Module({ imports: [RunDecisionsModule, RunMetricsModule, PayloadsModule], providers: [SchedulerService] })
export class SchedulerModule {}
