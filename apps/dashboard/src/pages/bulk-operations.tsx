import { useEffect, useState } from 'preact/hooks';
import { BULK_ACTIONS, CANCELLABLE_STATES } from '@chronicle/domain/vocabulary';
import { describeError, graphql } from '../api/graphql-client';
import {
  BULK_OPERATION_QUERY,
  BULK_OPERATIONS,
  BULK_PREVIEW,
  RESUME_BULK,
  START_BULK,
  STOP_BULK,
  type BulkFilter,
  type BulkOperation,
  type BulkOperationsData,
  type BulkPreviewData,
} from '../api/operations';
import { ConfirmDialog } from '../components/confirm-dialog';
import { ErrorNote } from '../components/notes';
import { Time } from '../components/time';
import { useApi } from '../use-api';

type Action = (typeof BULK_ACTIONS)[number];

/** How often a running operation's progress is read. */
const PROGRESS_MS = 500;

const LABELS: Record<Action, { readonly verb: string; readonly what: string }> = {
  'cancel-runs': { verb: 'Cancel', what: 'waiting runs' },
  'pause-jobs': { verb: 'Pause', what: 'jobs' },
  'resume-jobs': { verb: 'Resume', what: 'paused jobs' },
  'replay-dead': { verb: 'Replay', what: 'dead runs' },
  'discard-dead': { verb: 'Discard', what: 'dead runs' },
};

const onRuns = (action: Action): boolean => action !== 'pause-jobs' && action !== 'resume-jobs';
const onDead = (action: Action): boolean => action === 'replay-dead' || action === 'discard-dead';
const finished = (status: string): boolean => status === 'done' || status === 'stopped' || status === 'failed';

/**
 * Bulk operations (docs/api.md, "Bulk operations"): a filter, its dry run (how many match and the first
 * ten), a confirmation, then the operation's progress as it runs in batches, with Stop and Resume. Each
 * operation's events name the signed-in token as their actor.
 */
export function BulkOperations({ token }: { token: string }) {
  const [action, setAction] = useState<Action>('cancel-runs');
  const [fields, setFields] = useState<Record<string, string>>({});
  const [preview, setPreview] = useState<BulkPreviewData['bulkOperationPreview'] | undefined>(undefined);
  const [confirming, setConfirming] = useState(false);
  const [operation, setOperation] = useState<BulkOperation | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const recent = useApi(
    (signal) => graphql<BulkOperationsData>(token, BULK_OPERATIONS, { first: 10 }, signal),
    [token, operation?.status],
  );

  // While it runs: its progress, read again and again until it is done, stopped or failed.
  useEffect(() => {
    if (operation === undefined || finished(operation.status)) return;
    const timer = setTimeout(() => {
      graphql<{ bulkOperation: BulkOperation }>(token, BULK_OPERATION_QUERY, { id: operation.id })
        .then((answer) => setOperation(answer.bulkOperation))
        .catch((err: unknown) => setError(`Could not read the operation's progress: ${describeError(err)}`));
    }, PROGRESS_MS);
    return () => clearTimeout(timer);
  }, [operation, token]);

  const filter = (): BulkFilter => {
    const given = (name: string): string | undefined => (fields[name] ?? '').trim() || undefined;
    const [after, before] = onDead(action) ? ['deadAfter', 'deadBefore'] : ['dueAfter', 'dueBefore'];
    return {
      team: given('team'),
      job: given('job'),
      queue: given('queue'),
      ...(action === 'cancel-runs' ? { state: given('state') } : {}),
      ...(onRuns(action)
        ? { error: given('error'), [after]: isoOf(given('after')), [before]: isoOf(given('before')) }
        : {}),
    };
  };
  const withoutEmpty = (value: BulkFilter): BulkFilter =>
    Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as BulkFilter;

  const dryRun = async (event: Event): Promise<void> => {
    event.preventDefault();
    setError(undefined);
    setPreview(undefined);
    try {
      const answer = await graphql<BulkPreviewData>(token, BULK_PREVIEW, { action, filter: withoutEmpty(filter()) });
      setPreview(answer.bulkOperationPreview);
    } catch (err) {
      setError(`The dry run failed: ${describeError(err)}`);
    }
  };
  const start = async (): Promise<void> => {
    setConfirming(false);
    setError(undefined);
    try {
      const answer = await graphql<{ startBulkOperation: BulkOperation }>(token, START_BULK, {
        action,
        filter: withoutEmpty(filter()),
      });
      setPreview(undefined);
      setOperation(answer.startBulkOperation);
    } catch (err) {
      setError(`Could not start: ${describeError(err)}`);
    }
  };
  const change = async (mutation: string, key: string): Promise<void> => {
    if (operation === undefined) return;
    try {
      const answer = await graphql<Record<string, BulkOperation>>(token, mutation, { id: operation.id });
      setOperation(answer[key]);
    } catch (err) {
      setError(describeError(err));
    }
  };
  const field = (name: string, label: string, hint?: string) => (
    <label>
      {label}
      <input
        name={name}
        value={fields[name] ?? ''}
        placeholder={hint}
        onInput={(e) => setFields({ ...fields, [name]: (e.target as HTMLInputElement).value })}
      />
    </label>
  );

  return (
    <>
      <h1 tabIndex={-1}>Bulk operations</h1>
      <form class="filters" onSubmit={(e) => void dryRun(e)} aria-label="Bulk operation">
        <label>
          Action
          <select
            name="action"
            value={action}
            onChange={(e) => {
              setAction((e.target as HTMLSelectElement).value as Action);
              setPreview(undefined);
            }}
          >
            {BULK_ACTIONS.map((a) => (
              <option key={a} value={a}>
                {`${LABELS[a].verb} ${LABELS[a].what}`}
              </option>
            ))}
          </select>
        </label>
        {field('team', 'Team', 'admin: one team')}
        {field('job', 'Job')}
        {field('queue', 'Queue')}
        {action === 'cancel-runs' && (
          <label>
            State
            <select
              name="state"
              onChange={(e) => setFields({ ...fields, state: (e.target as HTMLSelectElement).value })}
            >
              <option value="">any waiting</option>
              {CANCELLABLE_STATES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </label>
        )}
        {onRuns(action) && field('error', 'Last error contains')}
        {onRuns(action) && field('after', onDead(action) ? 'Dead after' : 'Due after', '2026-03-15T00:00:00Z')}
        {onRuns(action) && field('before', onDead(action) ? 'Dead before' : 'Due before', '2026-03-16T00:00:00Z')}
        <button type="submit">Dry run</button>
      </form>
      {error !== undefined && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {preview !== undefined && (
        <section aria-label="Dry run">
          <p role="status" class="status" data-matched={preview.matched}>
            {preview.matched === 0
              ? 'Nothing matches.'
              : `${preview.matched} ${LABELS[action].what} match. The first ${preview.sample.length}:`}
          </p>
          {preview.sample.length > 0 && (
            <div class="table-scroll">
              <table>
                <caption class="visually-hidden">The first matches</caption>
                <thead>
                  <tr>
                    <th scope="col">id</th>
                    <th scope="col">job</th>
                    <th scope="col">team</th>
                    <th scope="col">state</th>
                    <th scope="col">{onDead(action) ? 'died' : 'due'}</th>
                    <th scope="col">last error</th>
                  </tr>
                </thead>
                <tbody>
                  {preview.sample.map((item) => (
                    <tr key={item.id} data-sample-id={item.id}>
                      <th scope="row">{item.id}</th>
                      <td>{item.job}</td>
                      <td>{item.team}</td>
                      <td>{item.state}</td>
                      <td>
                        {(item.deadAt ?? item.dueAt) === null ? '—' : <Time iso={(item.deadAt ?? item.dueAt)!} />}
                      </td>
                      <td class="error-text">{item.lastError ?? '—'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          {preview.matched > 0 && (
            <button type="button" class="primary" onClick={() => setConfirming(true)}>
              {`${LABELS[action].verb} ${preview.matched} ${LABELS[action].what}`}
            </button>
          )}
        </section>
      )}
      {operation !== undefined && <Progress operation={operation} onChange={change} />}
      <h2>Recent operations</h2>
      <ErrorNote error={recent.error} />
      <div class="table-scroll">
        <table>
          <caption class="visually-hidden">Recent bulk operations, newest first</caption>
          <thead>
            <tr>
              <th scope="col">operation</th>
              <th scope="col">action</th>
              <th scope="col">status</th>
              <th scope="col">done</th>
              <th scope="col">started</th>
            </tr>
          </thead>
          <tbody>
            {(recent.data?.bulkOperations.edges ?? []).map(({ node }) => (
              <tr key={node.id} data-operation-id={node.id}>
                <th scope="row">{node.id}</th>
                <td>{node.action}</td>
                <td>{node.status}</td>
                <td>{`${node.acted} acted on, ${node.skipped} skipped of ${node.matched}`}</td>
                <td>
                  <Time iso={node.createdAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {confirming && preview !== undefined && (
        <ConfirmDialog
          title={`${LABELS[action].verb} ${preview.matched} ${LABELS[action].what}?`}
          message={`The ${preview.matched} ${LABELS[action].what} that matched now are taken, 100 at a time; any that change meanwhile are left alone. You can stop it and resume it later.`}
          confirmLabel={`${LABELS[action].verb} ${preview.matched} ${LABELS[action].what}`}
          onConfirm={() => void start()}
          onCancel={() => setConfirming(false)}
        />
      )}
    </>
  );
}

/** A running operation: a progress bar, its counts, and Stop or Resume. */
function Progress({
  operation,
  onChange,
}: {
  operation: BulkOperation;
  onChange: (mutation: string, key: string) => Promise<void>;
}) {
  const { status } = operation;
  return (
    <section aria-label="Progress" class="bulk-progress" data-status={status}>
      <h2>{`Operation ${operation.id}`}</h2>
      <progress
        max={Math.max(operation.matched, 1)}
        value={operation.matched === 0 ? 1 : operation.processed}
        aria-label={`${operation.processed} of ${operation.matched} looked at`}
      />
      <p role="status" aria-live="polite">
        {`${status}: ${operation.processed} of ${operation.matched} looked at, ${operation.acted} acted on, ${operation.skipped} skipped`}
        {operation.error === null ? '' : ` (${operation.error})`}
      </p>
      {(status === 'running' || status === 'stopping') && (
        <button type="button" onClick={() => void onChange(STOP_BULK, 'stopBulkOperation')}>
          Stop
        </button>
      )}
      {(status === 'stopped' || status === 'failed') && (
        <button type="button" onClick={() => void onChange(RESUME_BULK, 'resumeBulkOperation')}>
          Resume
        </button>
      )}
    </section>
  );
}

/** An instant as typed (ISO 8601, or what the browser's Date reads), as the API takes it. */
function isoOf(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const time = Date.parse(text);
  return Number.isNaN(time) ? text : new Date(time).toISOString();
}
