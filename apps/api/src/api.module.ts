import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { CommandsModule } from '@chronicle/commands';
import { type JsonLogger, LOGGER } from '@chronicle/platform';
import { AuthModule } from './auth/auth.module';
import { BulkOperationsController } from './bulk/bulk-operations.controller';
import { BulkOperationsWorker } from './bulk/bulk-operations-worker';
import { DashboardModule } from './dashboard/dashboard.module';
import { ShardsController } from './admin/shards.controller';
import { CanaryWorker } from './canary/canary-worker';
import { TargetDispatcher } from './targets/target-dispatcher';
import { DlqController } from './dlq/dlq.controller';
import { GraphqlApiModule } from './graphql/graphql-api.module';
import { ProblemDetailsFilter } from './http/problem-details.filter';
import { JobsController } from './jobs/jobs.controller';
import { JobsListingController } from './listings/jobs-listing.controller';
import { RunsListingController } from './listings/runs-listing.controller';
import { AuditController } from './audit/audit.controller';
import { DeadLettersBulkController } from './dlq/dlq-bulk.controller';
import { QueueLimitsController } from './queues/queue-limits.controller';
import { TeamQuotasController } from './quotas/team-quotas.controller';
import { RunsController } from './runs/runs.controller';
import { SchedulesController } from './schedules/schedules.controller';
import { QueuesController, TeamsController } from './teams/teams.controller';
import { WorkersController } from './workers/workers.controller';

/**
 * The REST /v1 API, the worker protocol, POST /graphql and the dashboard: controllers and resolvers send commands and
 * queries; every error leaves as RFC 9457 problem details (REST) or with their type as its code (GraphQL). Request
 * bodies, query strings and GraphQL's arguments are checked by one validator (http/compiled-body.ts): unknown fields,
 * wrong types and out-of-range numbers are a 400 validation-error naming the field.
 */
@Module({
  imports: [CommandsModule, AuthModule, GraphqlApiModule, DashboardModule],
  controllers: [
    TeamsController,
    QueuesController,
    TeamQuotasController,
    QueueLimitsController,
    JobsController,
    JobsListingController,
    RunsController,
    RunsListingController,
    AuditController,
    DeadLettersBulkController,
    BulkOperationsController,
    WorkersController,
    DlqController,
    SchedulesController,
    ShardsController,
  ],
  providers: [
    CanaryWorker,
    TargetDispatcher,
    BulkOperationsWorker,
    {
      provide: APP_FILTER,
      inject: [LOGGER],
      useFactory: (logger: JsonLogger) => new ProblemDetailsFilter(logger.child('http')),
    },
  ],
})
export class ApiModule {}
