export * from './checkpoints/projection-checkpoints.sql';
export * from './jobs/jobs.projection';
export * from './jobs/jobs.sql';
export * from './projection';
export * from './projections';
export * from './runs/runs.projection';
export * from './runs/runs.sql';
export * from './stream-activity/stream-activity.projection';
