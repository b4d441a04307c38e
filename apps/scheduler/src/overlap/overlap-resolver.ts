import type { Pool } from 'pg';
import type { RunServers } from '@chronicle/commands';
import { DomainError, decide, type RunCommand, RUN_EVENT_SCHEMA_VERSION } from '@chronicle/domain';
import { findRunSnapshotsAt } from '@chronicle/projections';
import { passOnEveryServer } from '../shards/shard-fence';
import type { ShardScope } from '../shards/shard-ownership';
import { lockOverlapTargets, type OverlapTarget } from './overlapping-runs.sql';

const BATCH = 500;

/**
 * The overlap policies of scheduled jobs (Temporal's names), applied each
 * scheduler tick: a fire that must not start is cancelled with the reason
 * `overlap_skipped`, a leased run a newer fire replaces with
 * `overlap_superseded`; `detail` names the other run. The events say why.
 * A job's runs are all on its shard's server: each run server is looked at
 * on its own, under the fence held in the control database (`control`).
 */
export class OverlapResolver {
  constructor(
    private readonly servers: RunServers,
    private readonly control: Pool,
  ) {}

  /** One pass over the scope's shards; resolves with the number of runs decided. */
  async resolveOnce(scope: ShardScope): Promise<number> {
    return passOnEveryServer(this.servers, this.control, scope, (server, hold, own) =>
      server.decisions.pass({
        batch: BATCH,
        lockAndLoad: async (tx, limit, reserved) => {
          const targets = new Map((await lockOverlapTargets(tx, limit, reserved, own)).map((t) => [t.run_id, t]));
          if (targets.size === 0) return null;
          await hold(tx);
          return { ...(await findRunSnapshotsAt(tx, [...targets.keys()])), context: targets };
        },
        decideOne: (run, now, targets) => decideOverlap(targets.get(run.definition.runId)!, run, now),
        actor: 'scheduler:overlap-policy',
        schemaVersion: RUN_EVENT_SCHEMA_VERSION,
      }),
    );
  }
}

function decideOverlap(
  target: OverlapTarget,
  run: Parameters<typeof decide>[1],
  now: Date,
): ReturnType<typeof decide> | null {
  const command: RunCommand =
    target.action === 'supersede'
      ? {
          type: 'SupersedeRun',
          now,
          detail: `overlapPolicy cancel_other: superseded by the newer fire ${target.other}`,
        }
      : { type: 'SkipOverlappingRun', now, detail: skipDetail(target) };
  try {
    return decide(command, run);
  } catch (err) {
    // The run moved on since the targets were read (leased, finished): nothing to decide.
    if (err instanceof DomainError) return null;
    throw err;
  }
}

function skipDetail(target: OverlapTarget): string {
  if (target.policy === 'buffer_one')
    return `overlapPolicy buffer_one: one fire already waits for run ${target.other} to finish`;
  if (target.policy === 'cancel_other') return 'overlapPolicy cancel_other: a newer fire replaces this one';
  return `overlapPolicy skip: run ${target.other} was still running`;
}
