import type { DefinedJob, JobDefinition } from '@chronicle/domain';

export interface JobView extends Omit<JobDefinition, 'team'> {
  readonly team: string;
  readonly version: number;
  readonly paused: boolean;
}

/** A job as REST shows it: its definition, version and paused flag in one object. */
export function jobView(job: DefinedJob): JobView {
  return { ...job.definition, version: job.version, paused: job.paused };
}
