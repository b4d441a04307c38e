import { jobsProjection } from './jobs/jobs.projection';
import { runsProjection } from './runs/runs.projection';
import { streamActivityProjection } from './stream-activity/stream-activity.projection';
import type { Projection } from './projection';

/** Every projection the projector runs, one runner each. */
export const PROJECTIONS: readonly Projection[] = [streamActivityProjection, jobsProjection, runsProjection];
