import type { Pool } from 'pg';
import { defineNewJobs, madeRunId, newRunScheduled } from '@chronicle/commands';
import {
  RUN_EVENT_SCHEMA_VERSION,
  runStreamId,
  type JobDefinition,
  type Priority,
  type RunEvent,
} from '@chronicle/domain';
import type { EventStore, StreamAppend } from '@chronicle/event-store';
import { testJob } from '@chronicle/testing';

const TEAMS = 50;
const JOBS_PER_TEAM = 20;
const PRIORITIES: readonly Priority[] = ['critical', 'default', 'bulk'];
/** Runs started per append: each append carries the next event of the runs of the last few such groups. */
const RUNS_PER_GROUP = 1500;

/**
 * A log of `events` events as the commands write them: 1,000 jobs of 50 teams (JobDefined), then
 * runs going through their lives in overlapping groups, each append (one transaction, many
 * streams) carrying the next event of every run still going: RunScheduled, RunLeased, sometimes
 * LeaseExtended, then RunSucceeded (most), RunFailed with a retry, LeaseExpired, and RunDead when
 * the attempts are used up. Deterministic: run n's life is a function of n.
 */
export async function seedRebuildLog(pool: Pool, store: EventStore, events: number): Promise<void> {
  const jobs: JobDefinition[] = [];
  for (let t = 0; t < TEAMS; t++)
    for (let j = 0; j < JOBS_PER_TEAM; j++) {
      const team = `team-${String(t).padStart(2, '0')}`;
      jobs.push(
        testJob({
          name: `${team}.job-${j}`,
          team,
          queue: `${team}-q${j % 3}`,
          priority: PRIORITIES[(t + j) % PRIORITIES.length]!,
          payload: { report: `r-${j}`, rows: j * 100 },
        }),
      );
    }
  await store.unitOfWork(pool, (uow) => defineNewJobs(uow, jobs, 'bench'));
  let written = jobs.length;
  const start = Date.now() - 6 * 3_600_000;
  const live: Array<{ streamId: string; events: RunEvent[]; next: number }> = [];
  let runs = 0;
  while (written < events || live.length > 0) {
    if (written < events) {
      for (let k = 0; k < RUNS_PER_GROUP && written < events; k++, runs++) {
        const life = lifeOf(runs, jobs[runs % jobs.length]!, start + runs * 50);
        live.push({ streamId: runStreamId(life.runId), events: life.events, next: 0 });
        written += life.events.length;
      }
    }
    const appends: StreamAppend[] = live.map((run) => ({
      streamId: run.streamId,
      expected: run.next === 0 ? 'no_stream' : BigInt(run.next - 1),
      events: [{ type: run.events[run.next]!.type, data: run.events[run.next]!.data, metadata: RUN_METADATA }],
    }));
    await store.appendToStreams(appends);
    for (const run of live) run.next++;
    for (let i = live.length - 1; i >= 0; i--) if (live[i]!.next >= live[i]!.events.length) live.splice(i, 1);
  }
}

const RUN_METADATA = { actor: 'worker:platform', schemaVersion: RUN_EVENT_SCHEMA_VERSION };

/** Run n's events, from its due time on: up to 3 attempts, each leased, maybe extended, then ended. */
function lifeOf(n: number, job: JobDefinition, dueMs: number): { runId: string; events: RunEvent[] } {
  // An id as the server makes one for a request: the log keeps its stream as the server's would be kept.
  const runId = madeRunId(job.name);
  const iso = (ms: number): string => new Date(ms).toISOString();
  const events: RunEvent[] = [
    {
      type: 'RunScheduled',
      data: newRunScheduled(job, 1, { runId, dueAt: new Date(dueMs), idempotencyKey: runId, source: 'api' }),
    },
  ];
  let at = dueMs + (n % 7) * 100;
  for (let attempt = 1; attempt <= job.retry.maxAttempts; attempt++) {
    const fencingToken = events.length;
    const workerId = `worker-${n % 16}`;
    events.push({
      type: 'RunLeased',
      data: { attempt, fencingToken, workerId, leasedAt: iso(at), leaseExpiresAt: iso(at + 30_000) },
    });
    if (n % 5 === 0) events.push({ type: 'LeaseExtended', data: { fencingToken, leaseExpiresAt: iso(at + 60_000) } });
    at += 2000;
    // About 1 in 6 attempts fails, 1 in 30 loses its lease; attempt n's fate from n and attempt.
    const fate = (n * 7 + attempt * 13) % 30;
    const last = attempt === job.retry.maxAttempts;
    if (fate >= 6) {
      events.push({ type: 'RunSucceeded', data: { attempt, fencingToken, completedAt: iso(at) } });
      return { runId, events };
    }
    const retryAt = last ? null : iso(at + 30_000 * attempt);
    if (fate === 0) events.push({ type: 'LeaseExpired', data: { attempt, fencingToken, expiredAt: iso(at), retryAt } });
    else
      events.push({
        type: 'RunFailed',
        data: { attempt, fencingToken, error: `exit ${fate}`, retryable: true, failedAt: iso(at), retryAt },
      });
    if (last) {
      const reason = fate === 0 ? 'lease_expired' : 'attempts_exhausted';
      events.push({
        type: 'RunDead',
        data: { attempt, reason, lastError: fate === 0 ? 'lease expired' : `exit ${fate}`, deadAt: iso(at) },
      });
      return { runId, events };
    }
    at += 30_000 * attempt;
  }
  return { runId, events };
}
