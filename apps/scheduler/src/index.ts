/** The public surface of this package: what the other packages of the repository import from it. */
export { Materialiser } from './materialiser/materialiser';
export { SchedulerModule } from './scheduler.module';
export { RunRetention } from './retention/run-retention';
export { type ShardScope, soleNodeScope } from './shards/shard-ownership';
