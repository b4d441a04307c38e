import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import {
  diffDefinitions,
  foldJob,
  jobStreamId,
  JobEventType,
  type FieldChange,
  type JobEvent,
  type ReaderCaller,
} from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import { EVENT_STORE } from '@chronicle/platform';
import { toDomainEvent } from '../unit-of-work/stream-command';
import { ownJob } from './job-stream';

/** One version of a job's definition: who defined it, when, and what it changed from the one before. */
export interface JobVersion {
  readonly version: number;
  readonly definedAt: Date;
  readonly actor: string | null;
  readonly definition: unknown;
  /** Every field for the first version (from nothing). */
  readonly changes: readonly FieldChange[];
}

/** GET /v1/jobs/{name}/versions: every definition of the job, oldest first, from its stream. */
export class GetJobVersions extends Query<JobVersion[]> {
  constructor(
    readonly caller: ReaderCaller,
    readonly name: string,
  ) {
    super();
  }
}

@QueryHandler(GetJobVersions)
export class GetJobVersionsHandler implements IQueryHandler<GetJobVersions> {
  constructor(@Inject(EVENT_STORE) private readonly eventStore: EventStore) {}

  async execute({ caller, name }: GetJobVersions): Promise<JobVersion[]> {
    const recorded = await this.eventStore.readStream(jobStreamId(name));
    ownJob(caller, foldJob(recorded.map(toDomainEvent) as JobEvent[]), name);
    const versions: JobVersion[] = [];
    let before: unknown = {};
    for (const event of recorded) {
      if (event.type !== JobEventType.JobDefined) continue;
      const { definition, version } = event.data as { definition: unknown; version: number };
      const actor = event.metadata['actor'];
      versions.push({
        version,
        definedAt: event.recordedAt,
        actor: typeof actor === 'string' ? actor : null,
        definition,
        changes: diffDefinitions(...withDryRunSaid(before, definition)),
      });
      before = definition;
    }
    return versions;
  }
}

/**
 * A definition says `dryRun` only while it is true: where either side of a change says it, both do,
 * so that switching out of dry run reads as `true` to `false`, not as a field removed.
 */
function withDryRunSaid(before: unknown, after: unknown): [unknown, unknown] {
  const says = (d: unknown): d is Record<string, unknown> => typeof d === 'object' && d !== null && 'dryRun' in d;
  if (!says(before) && !says(after)) return [before, after];
  const said = (d: unknown): unknown =>
    typeof d === 'object' && d !== null && Object.keys(d).length > 0
      ? { ...d, dryRun: says(d) && d.dryRun === true }
      : d;
  return [said(before), said(after)];
}
