import type { CommandBus, QueryBus } from '@nestjs/cqrs';
import { EnqueueRuns, GetJob, TransitionRun } from '@chronicle/commands';
import {
  assertPayloadSize,
  dueTimeOf,
  parseIdempotencyKey,
  parseName,
  parseRunId,
  requireJobQueue,
  requireTeam,
  type Caller,
  type PresentRun,
} from '@chronicle/domain';
import type { EnqueueBody } from './run-dto';

/*
 * A caller's request about runs as the command it comes to, written once for REST (RunsController,
 * DlqController) and GraphQL (RunResolver): the same checks, so the same events with the same actor.
 */

/** POST /v1/jobs/{name}/runs and enqueueRun: one run of a team's job, now, at runAt or after delaySeconds. */
export async function enqueueOneRun(
  buses: { readonly commands: CommandBus; readonly queries: QueryBus },
  caller: Caller,
  rawJobName: string,
  body: EnqueueBody,
  rawIdempotencyKey: string | undefined,
  now: Date,
): Promise<{ run: PresentRun; created: boolean }> {
  const team = requireTeam(caller);
  const job = await buses.queries.execute(new GetJob(team, parseName(rawJobName, 'job name')));
  requireJobQueue(team, job.definition);
  const dueAt = dueTimeOf(body, now);
  const idempotencyKey = parseIdempotencyKey(rawIdempotencyKey);
  assertPayloadSize(body.payload);
  const [result] = await buses.commands.execute(
    new EnqueueRuns(
      team,
      [
        {
          job,
          request: {
            payload: body.payload,
            dueAt,
            ifRunning: body.ifRunning ?? 'queue',
            ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
            ...runKeysOf(body),
          },
        },
      ],
      'api',
    ),
  );
  return result!;
}

/** POST /v1/runs/{id}:cancel and cancelRun. */
export function cancelRunCommand(caller: Caller, id: string): TransitionRun {
  return new TransitionRun(requireTeam(caller), parseRunId(id), (now) => ({ type: 'CancelRun', now }));
}

/** POST /v1/dlq/{id}:replay and :discard, replayDeadLetter and discardDeadLetter. */
export function deadLetterCommand(caller: Caller, id: string, action: 'replay' | 'discard'): TransitionRun {
  return new TransitionRun(requireTeam(caller), parseRunId(id), (now) =>
    action === 'replay' ? { type: 'ReplayRun', now } : { type: 'DiscardRun', now },
  );
}

/**
 * An enqueue body's keys as EnqueueRequest takes them: its unique key (and what to do when a run holds it),
 * its concurrency key, its ordering key, its debounce key.
 */
export function runKeysOf(
  body: Pick<EnqueueBody, 'uniqueKey' | 'ifDuplicate' | 'concurrencyKey' | 'orderingKey' | 'debounceKey'>,
): {
  uniqueKey?: string;
  ifDuplicate?: 'existing' | 'reject';
  concurrencyKey?: string;
  orderingKey?: string;
  debounceKey?: string;
} {
  return {
    ...(body.uniqueKey == null ? {} : { uniqueKey: body.uniqueKey, ifDuplicate: body.ifDuplicate ?? 'existing' }),
    ...(body.concurrencyKey == null ? {} : { concurrencyKey: body.concurrencyKey }),
    ...(body.orderingKey == null ? {} : { orderingKey: body.orderingKey }),
    ...(body.debounceKey == null ? {} : { debounceKey: body.debounceKey }),
  };
}
