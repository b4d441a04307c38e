import { Module, ValidationPipe } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { ProblemDetailsFilter } from '../../../libs/platform/src/http/problem-details.filter';
import type { JsonLogger } from '../../../libs/platform/src/logging/logger';
import { LOGGER } from '../../../libs/platform/src/runtime/tokens';
import { AuthGuard } from './auth/auth.guard';
import { DlqController } from './dlq/dlq.controller';
import { JobsController } from './jobs/jobs.controller';
import { JOB_HANDLERS } from './jobs/job.commands';
import { JobsService } from './jobs/jobs.service';
import { RunsController } from './runs/runs.controller';
import { RUN_COMMAND_HANDLERS } from './runs/run.commands';
import { RUN_QUERY_HANDLERS } from './runs/run.queries';
import { RunsService } from './runs/runs.service';
import { TeamQuotasController } from './quotas/team-quotas.controller';
import { SchedulesController } from './schedules/schedules.controller';
import { QueuesController, TeamsController } from './teams/teams.controller';
import { LeaseService } from './workers/lease.service';
import { CompletionService } from './workers/completion.service';
import { ReadySignal } from './workers/ready-signal';
import { WorkersController } from './workers/workers.controller';

/** The REST /v1 API and the worker protocol. Every error leaves as RFC 9457 problem details. */
@Module({
  // Commands and queries are routed by @nestjs/cqrs (wiring only: nothing durable rides on its buses).
  imports: [CqrsModule.forRoot()],
  controllers: [TeamsController, QueuesController, TeamQuotasController, JobsController, RunsController, WorkersController, DlqController, SchedulesController],
  providers: [
    { provide: APP_FILTER, inject: [LOGGER], useFactory: (logger: JsonLogger) => new ProblemDetailsFilter(logger.child('http')) },
    // Unknown fields, wrong types and out-of-range numbers are a 400 with field-level detail.
    { provide: APP_PIPE, useValue: new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: true, forbidUnknownValues: true }) },
    AuthGuard,
    JobsService,
    RunsService,
    LeaseService,
    CompletionService,
    ReadySignal,
    ...JOB_HANDLERS,
    ...RUN_COMMAND_HANDLERS,
    ...RUN_QUERY_HANDLERS,
  ],
})
export class ApiModule {}
