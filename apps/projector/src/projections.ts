import { jobsProjection } from '../../../projections/jobs.projection';
import { runsProjection } from '../../../projections/runs.projection';
import { streamActivityProjection } from '../../../projections/stream-activity.projection';
import type { Projection } from './projection';

/** Every projection the projector runs, one runner each. */
export const PROJECTIONS: readonly Projection[] = [streamActivityProjection, jobsProjection, runsProjection];
