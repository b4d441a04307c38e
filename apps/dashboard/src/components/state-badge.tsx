import type { RunState } from '@chronicle/domain/vocabulary';

/** A run state by the API's own name (libs/domain/src/run/run-states.ts), coloured by what it asks of the reader. */
export function StateBadge({ state }: { state: RunState }) {
  return <span class={`state state-${state}`}>{state}</span>;
}

/** A run made from a job in dry run (docs/api.md, "Schedules"): its handler was told to have no effects. */
export function DryRunBadge({ dryRun }: { dryRun: boolean }) {
  return dryRun ? (
    <span class="state dry-run" title="dry run: the handler logs what it would do, with no effects">
      dry run
    </span>
  ) : null;
}
