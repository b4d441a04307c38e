/**
 * The run states, defined here once; the API, the dashboards and
 * the read table's CHECK constraint use these names, exactly. `ready` is derived from
 * time (a scheduled or retry_wait run whose due time has passed), not an event.
 */
export const RunState = {
  scheduled: 'scheduled',
  ready: 'ready',
  leased: 'leased',
  succeeded: 'succeeded',
  retryWait: 'retry_wait',
  dead: 'dead',
  cancelled: 'cancelled',
} as const;

export type RunState = (typeof RunState)[keyof typeof RunState];

export const RUN_STATES: readonly RunState[] = Object.values(RunState);

/*
 * The groups of states that queries and partial indexes select by. SQL uses them through sqlList
 * (never a hand-written IN list); sql-mirrors-domain.int-spec.ts checks the migrations' CHECK constraint and
 * partial indexes against them.
 */

/** The states a run row can hold: `ready` is derived from time, never stored. */
export const STORED_RUN_STATES = RUN_STATES.filter((s) => s !== RunState.ready);
/** Waiting for their time: ready once available_at has passed, and then claimable. */
export const WAITING_RUN_STATES = [RunState.scheduled, RunState.retryWait] as const satisfies readonly RunState[];
/** Not final: what a team's maxPendingRuns counts. */
export const PENDING_RUN_STATES = [...WAITING_RUN_STATES, RunState.leased] as const satisfies readonly RunState[];

/**
 * Ended without success: they pile up like the succeeded but are few among them, so listings by state
 * read them from partial indexes of their own (runs_ended_team_idx, runs_ended_job_idx, by runs.ended).
 */
export const UNSUCCESSFUL_RUN_STATES = [RunState.dead, RunState.cancelled] as const satisfies readonly RunState[];

/** A run waiting for its time (scheduled or retry_wait): ready once it has come. */
export function isWaiting(state: RunState): state is (typeof WAITING_RUN_STATES)[number] {
  return (WAITING_RUN_STATES as readonly RunState[]).includes(state);
}
