import { createHash } from 'node:crypto';
import type { JobDefinition, PresentRun, RunScheduledData, RunUnique, TraceContext } from '@chronicle/domain';
import { uuidV7 } from '@chronicle/event-store';
import type { Queryable } from '@chronicle/platform';
import { findRunSnapshots } from '@chronicle/projections';
import { slottedRunId } from '../shards/shard-of';

/** A new run's id, made for it: time-ordered (UUIDv7's time and randomness), naming its job's slot. */
export function madeRunId(job: string): string {
  return slottedRunId(uuidV7().replace(/-/g, ''), job);
}

/**
 * Stable for the same (job, key): a repeated request or a second materialisation finds the stream there.
 * The first 128 bits of SHA-256(job, key), with the variant of a UUID, naming the job's slot.
 */
export function derivedRunId(job: string, key: string): string {
  const hex = keyHash(job, key).toString('hex');
  const variant = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return slottedRunId(`${hex.slice(0, 16)}${variant}${hex.slice(17, 32)}`, job);
}

/**
 * The id derivedRunId gave (job, key) before run ids named their slot: a run made then keeps it, so a
 * lookup of a derived id tries this one too (findDerivedRuns).
 */
export function derivedRunIdBefore(job: string, key: string): string {
  return `run_${keyHash(job, key).toString('base64url').slice(0, 27)}`;
}

function keyHash(job: string, key: string): Buffer {
  return createHash('sha256').update(job).update('\u0000').update(key).digest();
}

/** A derived run id, and the id the same (job, key) gave before run ids named their slot. */
export interface DerivedRunId {
  readonly runId: string;
  readonly before: string;
}

/** The runs that exist under these derived ids, or under the ids they had before; by the id asked. */
export async function findDerivedRuns(db: Queryable, ids: readonly DerivedRunId[]): Promise<Map<string, PresentRun>> {
  if (ids.length === 0) return new Map();
  const lookedFor = [...new Set(ids.flatMap(({ runId, before }) => [runId, before]))];
  const found = new Map((await findRunSnapshots(db, lookedFor)).map((run) => [run.definition.runId, run]));
  const byAsked = new Map<string, PresentRun>();
  for (const { runId, before } of ids) {
    const run = found.get(runId) ?? found.get(before);
    if (run !== undefined) byAsked.set(runId, run);
  }
  return byAsked;
}

/** A scheduled run's id, from (job, nominal fire time). */
export function scheduledRunId(job: string, nominalAt: Date): string {
  return derivedRunId(job, scheduleKey(nominalAt));
}

/** scheduledRunId's id before run ids named their slot (derivedRunIdBefore). */
export function scheduledRunIdBefore(job: string, nominalAt: Date): string {
  return derivedRunIdBefore(job, scheduleKey(nominalAt));
}

function scheduleKey(nominalAt: Date): string {
  return `schedule@${nominalAt.toISOString()}`;
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
    readonly unique?: RunUnique;
    readonly concurrencyKey?: string;
    readonly debounceKey?: string;
    readonly trace?: TraceContext;
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
    ...(run.unique === undefined ? {} : { unique: run.unique }),
    ...(run.concurrencyKey === undefined ? {} : { concurrencyKey: run.concurrencyKey }),
    ...(run.debounceKey === undefined ? {} : { debounceKey: run.debounceKey }),
    ...(run.trace === undefined ? {} : { trace: run.trace }),
  };
}
