import { createHash } from 'node:crypto';
import type { JobDefinition, RunScheduledData } from '@chronicle/domain';

/** Stable for the same (job, key): a repeated request or a second materialisation finds the stream there. */
export function derivedRunId(job: string, key: string): string {
  return `run_${createHash('sha256').update(job).update('\u0000').update(key).digest('base64url').slice(0, 27)}`;
}

/** A scheduled run's id, from (job, nominal fire time). */
export function scheduledRunId(job: string, nominalAt: Date): string {
  return derivedRunId(job, `schedule@${nominalAt.toISOString()}`);
}

/** The RunScheduled of a new run of a job: the definition's queue, priority, retry, timeout and payload. */
export function newRunScheduled(
  definition: JobDefinition,
  jobVersion: number,
  run: {
    readonly runId: string;
    readonly dueAt: Date;
    readonly payload?: unknown;
    readonly idempotencyKey: string;
    readonly source: RunScheduledData['source'];
  },
): RunScheduledData {
  return {
    runId: run.runId,
    job: definition.name,
    team: definition.team,
    queue: definition.queue,
    priority: definition.priority,
    dueAt: run.dueAt.toISOString(),
    payload: run.payload === undefined ? definition.payload : run.payload,
    idempotencyKey: run.idempotencyKey,
    retry: definition.retry,
    timeoutSeconds: definition.timeoutSeconds,
    source: run.source,
    jobVersion,
    ...(definition.dryRun === true ? { dryRun: true } : {}),
  };
}
