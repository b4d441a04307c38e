import type { RunState } from '@chronicle/domain/vocabulary';

/** A run state by the API's own name (reference 7.3), coloured by what it asks of the reader. */
export function StateBadge({ state }: { state: RunState }) {
  return <span class={`state state-${state}`}>{state}</span>;
}
