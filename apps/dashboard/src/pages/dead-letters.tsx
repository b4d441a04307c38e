import { useState } from 'preact/hooks';
import { describeError, graphql } from '../api/graphql-client';
import {
  DEAD_LETTERS,
  DISCARD_DEAD_LETTER,
  REPLAY_DEAD_LETTER,
  type DeadLettersData,
  type DeadRun,
} from '../api/operations';
import { ConfirmDialog } from '../components/confirm-dialog';
import { Link } from '../components/link';
import { ErrorNote } from '../components/notes';
import { Time } from '../components/time';
import { paths } from '../router';
import { useApi } from '../use-api';

const PAGE_SIZE = 25;

type Decision = { readonly action: 'replay' | 'discard'; readonly run: DeadRun };

/**
 * Dead runs, newest first, a cursor page at a time, each with its last error. Replay (back to ready
 * with a fresh attempt budget) and discard (out of this list, history kept) ask first; the event
 * records the signed-in token's team as the actor.
 */
export function DeadLetters({ token }: { token: string }) {
  const [job, setJob] = useState('');
  const [draftJob, setDraftJob] = useState('');
  // The cursors of the pages before this one, to go back; null is the first page.
  const [cursors, setCursors] = useState<ReadonlyArray<string | null>>([null]);
  const [deciding, setDeciding] = useState<Decision | undefined>(undefined);
  const [status, setStatus] = useState('');
  const [actionError, setActionError] = useState<string | undefined>(undefined);
  const after = cursors[cursors.length - 1] ?? null;

  const loaded = useApi(
    (signal) => graphql<DeadLettersData>(token, DEAD_LETTERS, { job: job || null, first: PAGE_SIZE, after }, signal),
    [token, job, after],
  );
  const page = loaded.data?.deadLetters;
  const runs = page?.edges.map((e) => e.node) ?? [];

  const decide = async ({ action, run }: Decision): Promise<void> => {
    setDeciding(undefined);
    setActionError(undefined);
    try {
      const answer = await graphql<Record<string, { state: string }>>(
        token,
        action === 'replay' ? REPLAY_DEAD_LETTER : DISCARD_DEAD_LETTER,
        { id: run.id },
      );
      const state = Object.values(answer)[0]?.state;
      setStatus(action === 'replay' ? `Run ${run.id} replayed: now ${state ?? 'ready'}.` : `Run ${run.id} discarded.`);
      loaded.reload();
    } catch (err) {
      setActionError(`Could not ${action} run ${run.id}: ${describeError(err)}`);
    }
  };
  const filter = (event: Event): void => {
    event.preventDefault();
    setCursors([null]);
    setJob(draftJob.trim());
  };

  return (
    <>
      <h1 tabIndex={-1}>Dead letters</h1>
      <form class="filters" onSubmit={filter} role="search" aria-label="Filter dead letters">
        <label>
          Job
          <input value={draftJob} onInput={(e) => setDraftJob((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit">Filter</button>
      </form>
      <p role="status" class="status">
        {status}
      </p>
      {actionError !== undefined && (
        <p class="error" role="alert">
          {actionError}
        </p>
      )}
      <ErrorNote error={loaded.error} />
      <div class="table-scroll">
        <table>
          <caption class="visually-hidden">Dead runs, newest first</caption>
          <thead>
            <tr>
              <th scope="col">run</th>
              <th scope="col">job</th>
              <th scope="col">died</th>
              <th scope="col">attempts</th>
              <th scope="col">last error</th>
              <th scope="col">
                <span class="visually-hidden">actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {runs.map((run) => (
              <tr key={run.id} data-run-id={run.id}>
                <th scope="row">
                  <Link href={paths.run(run.id)}>{run.id}</Link>
                </th>
                <td>
                  <Link href={paths.job(run.job)}>{run.job}</Link>
                </td>
                <td>
                  <Time iso={run.deadAt} />
                </td>
                <td>{run.attempt}</td>
                <td class="error-text">{run.lastError ?? '—'}</td>
                <td class="row-actions">
                  <button
                    type="button"
                    aria-label={`Replay run ${run.id}`}
                    onClick={() => setDeciding({ action: 'replay', run })}
                  >
                    Replay
                  </button>
                  <button
                    type="button"
                    aria-label={`Discard run ${run.id}`}
                    onClick={() => setDeciding({ action: 'discard', run })}
                  >
                    Discard
                  </button>
                </td>
              </tr>
            ))}
            {runs.length === 0 && (
              <tr>
                <td colSpan={6}>{loaded.loading ? 'Loading…' : 'No dead runs.'}</td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      <nav class="pager" aria-label="Dead letter pages">
        <button type="button" disabled={cursors.length <= 1} onClick={() => setCursors(cursors.slice(0, -1))}>
          Previous page
        </button>
        <span>Page {cursors.length}</span>
        <button
          type="button"
          disabled={page?.pageInfo.hasNextPage !== true}
          onClick={() => page?.pageInfo.endCursor != null && setCursors([...cursors, page.pageInfo.endCursor])}
        >
          Next page
        </button>
      </nav>
      {deciding !== undefined && (
        <ConfirmDialog
          title={deciding.action === 'replay' ? 'Replay this run?' : 'Discard this run?'}
          message={
            deciding.action === 'replay'
              ? `Run ${deciding.run.id} of ${deciding.run.job} goes back to ready with a fresh attempt budget, and a worker will lease it again.`
              : `Run ${deciding.run.id} of ${deciding.run.job} leaves the dead letters for good. Its history is kept.`
          }
          confirmLabel={deciding.action === 'replay' ? 'Replay run' : 'Discard run'}
          onConfirm={() => void decide(deciding)}
          onCancel={() => setDeciding(undefined)}
        />
      )}
    </>
  );
}
