import 'reflect-metadata';
import type { Type } from '@nestjs/common';
import { ApiModule, configureApi } from '@chronicle/api';
import type { Role } from '@chronicle/platform';
import { ProjectorModule } from '@chronicle/projector';
import { SchedulerModule } from '@chronicle/scheduler';
import { runProcess } from '@chronicle/runtime';

const ROLE_MODULES: Readonly<Record<Role, Type>> = {
  api: ApiModule,
  scheduler: SchedulerModule,
  projector: ProjectorModule,
};

/**
 * `npm start`: the three roles in one process, on an embedded PostgreSQL unless DATABASE_URL is set;
 * ROLES picks some of them (`api,scheduler`: a node of a fleet whose projectors run apart).
 */
void runProcess({
  name: 'server',
  modules: (config) => config.roles.map((role) => ROLE_MODULES[role]),
  configure: (app, config) => {
    if (config.roles.includes('api')) configureApi(app);
  },
});
