import type { DefinedJob, JobDefinition } from '@chronicle/domain';

export interface JobView extends Omit<JobDefinition, 'team' | 'dryRun'> {
  readonly team: string;
  readonly version: number;
  readonly paused: boolean;
  readonly dryRun: boolean;
}

/** A job as REST shows it: its definition, version and paused flag in one object; dryRun always said. */
export function jobView(job: DefinedJob): JobView {
  return { ...job.definition, dryRun: job.definition.dryRun === true, version: job.version, paused: job.paused };
}
