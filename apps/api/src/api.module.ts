import { Module, ValidationPipe } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { CommandsModule } from '@chronicle/commands';
import { type JsonLogger, LOGGER } from '@chronicle/platform';
import { AuthGuard } from './auth/auth.guard';
import { DashboardModule } from './dashboard/dashboard.module';
import { DlqController } from './dlq/dlq.controller';
import { ProblemDetailsFilter } from './http/problem-details.filter';
import { JobsController } from './jobs/jobs.controller';
import { TeamQuotasController } from './quotas/team-quotas.controller';
import { RunsController } from './runs/runs.controller';
import { SchedulesController } from './schedules/schedules.controller';
import { QueuesController, TeamsController } from './teams/teams.controller';
import { WorkersController } from './workers/workers.controller';

/**
 * The REST /v1 API, the worker protocol and the dashboard: controllers send commands and queries; every error leaves
 * as RFC 9457 problem details.
 */
@Module({
  imports: [CommandsModule, DashboardModule],
  controllers: [
    TeamsController,
    QueuesController,
    TeamQuotasController,
    JobsController,
    RunsController,
    WorkersController,
    DlqController,
    SchedulesController,
  ],
  providers: [
    {
      provide: APP_FILTER,
      inject: [LOGGER],
      useFactory: (logger: JsonLogger) => new ProblemDetailsFilter(logger.child('http')),
    },
    // Unknown fields, wrong types and out-of-range numbers are a 400 with field-level detail. The hot
    // endpoints' bodies are `CompiledBody` parameters (http/compiled-body.ts), custom ones that it skips.
    {
      provide: APP_PIPE,
      useValue: new ValidationPipe({
        whitelist: true,
        forbidNonWhitelisted: true,
        transform: true,
        forbidUnknownValues: true,
      }),
    },
    AuthGuard,
  ],
})
export class ApiModule {}
