import { auditProjection } from './audit/audit.projection';
import { jobsProjection } from './jobs/jobs.projection';
import { runActivityProjection } from './run-activity/run-activity.projection';
import { runsProjection } from './runs/runs.projection';
import { streamActivityProjection } from './stream-activity/stream-activity.projection';
import type { Projection } from './projection';

/**
 * Every projection the projector runs, applied in this order to each batch: run-activity and audit
 * after runs and jobs, whose rows they read.
 */
export const PROJECTIONS: readonly Projection[] = [
  streamActivityProjection,
  jobsProjection,
  runsProjection,
  runActivityProjection,
  auditProjection,
];

/** The projections of runs' events alone: what a server runs are kept on builds from its own log. */
export const RUN_PROJECTIONS: readonly Projection[] = [runsProjection, runActivityProjection];
