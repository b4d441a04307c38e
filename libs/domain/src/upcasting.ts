import { JOB_EVENT_SCHEMA_VERSION } from './job/job-decider';
import { RUN_EVENT_SCHEMA_VERSION } from './run/run-events';
import { ADMIN_EVENT_SCHEMA_VERSION, AdminEventType, JobEventType, RunEventType } from './streams';

/**
 * Events keep the shape they were recorded with; their metadata says which (`schemaVersion`). A
 * reader that folds them sees the current shape: each older event goes through the upcasters of its
 * type, one version at a time. The log itself is never rewritten.
 */
type Upcaster = (data: Readonly<Record<string, unknown>>) => Record<string, unknown>;

/** By event type, the step from each version to the next. A type without a step kept its shape. */
const UPCASTERS: Readonly<Record<string, Readonly<Record<number, Upcaster>>>> = {
  // Version 2 of the run events: a run records the version of its job's definition it was made from.
  // A run scheduled before says nothing of it.
  RunScheduled: { 1: (data) => ({ ...data, jobVersion: null }) },
};

const RUN_TYPES = new Set<string>(Object.values(RunEventType));
const JOB_TYPES = new Set<string>(Object.values(JobEventType));
const ADMIN_TYPES = new Set<string>(Object.values(AdminEventType));

/** The version of the shape events of this type are written with today. */
export function currentSchemaVersion(type: string): number {
  if (RUN_TYPES.has(type)) return RUN_EVENT_SCHEMA_VERSION;
  if (JOB_TYPES.has(type)) return JOB_EVENT_SCHEMA_VERSION;
  if (ADMIN_TYPES.has(type)) return ADMIN_EVENT_SCHEMA_VERSION;
  return 1;
}

/** An event as a reader folds it: its type, and its data in today's shape whatever it was recorded with. */
export function upcastEvent(event: {
  readonly type: string;
  readonly data: unknown;
  readonly metadata: Readonly<Record<string, unknown>>;
}): { type: string; data: unknown } {
  return {
    type: event.type,
    data: upcastData(event.type, event.data, event.metadata['schemaVersion'], currentSchemaVersion(event.type)),
  };
}

/** The data of an event of `type` recorded at `schemaVersion` (none: the first), in the shape of `current`. */
export function upcastData(type: string, data: unknown, schemaVersion: unknown, current: number): unknown {
  const steps = UPCASTERS[type];
  if (steps === undefined || data === null || typeof data !== 'object') return data;
  let version = typeof schemaVersion === 'number' ? schemaVersion : 1;
  let upcast = data as Readonly<Record<string, unknown>>;
  for (; version < current; version++) {
    const step = steps[version];
    if (step !== undefined) upcast = step(upcast);
  }
  return upcast;
}
