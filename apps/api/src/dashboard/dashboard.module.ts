import * as path from 'node:path';
import { Module } from '@nestjs/common';
import { LOGGER, projectRoot, type JsonLogger } from '@chronicle/platform';
import { DASHBOARD_BUILD_DIR, loadDashboardFiles } from './dashboard-files';
import { DASHBOARD_FILES, DashboardController } from './dashboard.controller';

/** The dashboard at /dashboard, in every process that serves the API. */
@Module({
  controllers: [DashboardController],
  providers: [
    {
      provide: DASHBOARD_FILES,
      inject: [LOGGER],
      useFactory: (logger: JsonLogger) => {
        const buildDir = path.join(projectRoot(__dirname), DASHBOARD_BUILD_DIR);
        const files = loadDashboardFiles(buildDir);
        if (files === undefined)
          logger.warn('the dashboard is not built: /dashboard answers 503 until `npm run build`', { buildDir });
        return files ?? null;
      },
    },
  ],
})
export class DashboardModule {}
