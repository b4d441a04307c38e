import { type PresentRun, visibleState } from '@chronicle/domain';

export interface RunView {
  readonly runId: string;
  readonly job: string;
  readonly state: string;
  readonly dueAt: string;
  readonly availableAt: string;
  readonly attempt: number;
  readonly idempotencyKey: string;
  readonly queue: string;
  readonly priority: string;
  readonly leaseExpiresAt: string | null;
  readonly lastError: string | null;
  readonly jobVersion: number | null;
  readonly dryRun: boolean;
  readonly uniqueKey: string | null;
  readonly concurrencyKey: string | null;
  readonly orderingKey: string | null;
  readonly orderingSeq: number | null;
  readonly debounceKey: string | null;
}

export function runView(state: PresentRun, now: Date): RunView {
  return {
    runId: state.definition.runId,
    job: state.definition.job,
    state: visibleState(state, now),
    dueAt: state.definition.dueAt,
    availableAt: state.availableAt,
    attempt: state.attempt,
    idempotencyKey: state.definition.idempotencyKey,
    queue: state.definition.queue,
    priority: state.definition.priority,
    leaseExpiresAt: state.lease?.expiresAt ?? null,
    lastError: state.lastError,
    jobVersion: state.definition.jobVersion,
    dryRun: state.definition.dryRun === true,
    uniqueKey: state.definition.unique?.key ?? null,
    concurrencyKey: state.definition.concurrencyKey ?? null,
    orderingKey: state.definition.ordering?.key ?? null,
    orderingSeq: state.definition.ordering?.seq ?? null,
    debounceKey: state.definition.debounceKey ?? null,
  };
}
