import { jobsProjection } from './jobs/jobs.projection';
import { runActivityProjection } from './run-activity/run-activity.projection';
import { runsProjection } from './runs/runs.projection';
import { streamActivityProjection } from './stream-activity/stream-activity.projection';
import type { Projection } from './projection';

/**
 * Every projection the projector runs, applied in this order to each batch: run-activity after runs,
 * whose rows it reads.
 */
export const PROJECTIONS: readonly Projection[] = [
  streamActivityProjection,
  jobsProjection,
  runsProjection,
  runActivityProjection,
];
