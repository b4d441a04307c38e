import 'reflect-metadata';
import { ApiModule } from '../../api/src/api.module';
import { setupOpenApi } from '../../api/src/openapi';
import { ProjectorModule } from '../../projector/src/projector.module';
import { SchedulerModule } from '../../scheduler/src/scheduler.module';
import { runProcess } from '../../../libs/platform/src/runtime/run-process';

/** `npm start`: all three roles in one process, on an embedded PostgreSQL unless DATABASE_URL is set. */
void runProcess({ name: 'server', modules: [ApiModule, SchedulerModule, ProjectorModule], configure: setupOpenApi });
