import 'reflect-metadata';
import { ApiModule, configureApi } from '@chronicle/api';
import { ProjectorModule } from '@chronicle/projector';
import { SchedulerModule } from '@chronicle/scheduler';
import { runProcess } from '@chronicle/runtime';

/** `npm start`: all three roles in one process, on an embedded PostgreSQL unless DATABASE_URL is set. */
void runProcess({ name: 'server', modules: [ApiModule, SchedulerModule, ProjectorModule], configure: configureApi });
