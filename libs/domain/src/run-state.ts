/**
 * The run states of reference-design 7.3, exactly; the API, the dashboards and
 * the read table's CHECK constraint use these names. `ready` is derived from
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

/** No transition leaves these, except a DLQ replay of `dead`. */
export function isTerminal(state: RunState): boolean {
  switch (state) {
    case 'succeeded':
    case 'dead':
    case 'cancelled':
      return true;
    case 'scheduled':
    case 'ready':
    case 'leased':
    case 'retry_wait':
      return false;
    default: {
      const unknown: never = state;
      throw new Error(`unknown run state ${String(unknown)}`);
    }
  }
}
