export * from './materialiser/materialiser';
export * from './materialiser/scheduled-jobs.sql';
export * from './overlap/overlap-resolver';
export * from './overlap/overlapping-runs.sql';
export * from './reaper/lease-reaper';
export * from './reaper/reap-expired-leases.sql';
export * from './scheduler.module';
export * from './scheduler.service';
