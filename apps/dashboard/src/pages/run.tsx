import { graphql } from '../api/graphql-client';
import { RUN, type RunData } from '../api/operations';
import { eventSummary } from '../event-summary';
import { Link } from '../components/link';
import { ErrorNote } from '../components/notes';
import { PayloadView } from '../components/payload-view';
import { DryRunBadge, StateBadge } from '../components/state-badge';
import { Time } from '../components/time';
import { paths } from '../router';
import { useApi } from '../use-api';
import { isRefusal } from './job';

/** While a run is live its page follows it. */
const RUN_REFRESH_MS = 5000;

/** A run: its state, its attempts with their errors, the timeline of its events (actor, time), its payload. */
export function Run({ token, id }: { token: string; id: string }) {
  const loaded = useApi((signal) => graphql<RunData>(token, RUN, { id }, signal), [token, id], RUN_REFRESH_MS);
  if (loaded.data?.run === null || isRefusal(loaded.error))
    return (
      <>
        <h1 tabIndex={-1}>Run {id}</h1>
        <p class="error" role="alert">
          No run {id} for this token: it does not exist, or it belongs to another team.
        </p>
      </>
    );
  const run = loaded.data?.run;
  if (run === undefined)
    return (
      <>
        <h1 tabIndex={-1}>Run {id}</h1>
        <ErrorNote error={loaded.error} />
        {loaded.loading && <p>Loading…</p>}
      </>
    );
  const attempts = run.attempts;

  return (
    <>
      <h1 tabIndex={-1}>
        Run {run.id} <StateBadge state={run.state} /> <DryRunBadge dryRun={run.dryRun} />
      </h1>
      <ErrorNote error={loaded.error} />
      <dl class="facts">
        <dt>state</dt>
        <dd data-testid="run-state">{run.state}</dd>
        <dt>job</dt>
        <dd>
          <Link href={paths.job(run.job)}>{run.job}</Link>
        </dd>
        <dt>team</dt>
        <dd>{run.team}</dd>
        <dt>queue</dt>
        <dd>
          {run.queue} ({run.priority})
        </dd>
        <dt>due</dt>
        <dd>
          <Time iso={run.dueAt} />
        </dd>
        <dt>ready at</dt>
        <dd data-testid="available-at">
          <Time iso={run.availableAt} />
        </dd>
        <dt>attempt</dt>
        <dd>{run.attempt}</dd>
        <dt>lease expires</dt>
        <dd>
          <Time iso={run.leaseExpiresAt} />
        </dd>
        <dt>idempotency key</dt>
        <dd class="mono">{run.idempotencyKey}</dd>
        <dt>unique key</dt>
        <dd class="mono" data-testid="unique-key">
          {run.uniqueKey ?? '—'}
        </dd>
        <dt>concurrency key</dt>
        <dd class="mono" data-testid="concurrency-key">
          {run.concurrencyKey ?? '—'}
        </dd>
        <dt>ordering key</dt>
        <dd class="mono" data-testid="ordering-key">
          {run.orderingKey === null ? '—' : `${run.orderingKey} (place ${run.orderingSeq})`}
        </dd>
        <dt>debounce key</dt>
        <dd class="mono" data-testid="debounce-key">
          {run.debounceKey ?? '—'}
        </dd>
        <dt>last error</dt>
        <dd class="error-text">{run.lastError ?? '—'}</dd>
      </dl>

      <section aria-labelledby="attempts">
        <h2 id="attempts">Attempts</h2>
        {attempts.length === 0 ? (
          <p>Not leased yet.</p>
        ) : (
          <div class="table-scroll">
            <table>
              <thead>
                <tr>
                  <th scope="col">attempt</th>
                  <th scope="col">worker</th>
                  <th scope="col">started</th>
                  <th scope="col">outcome</th>
                  <th scope="col">ended</th>
                  <th scope="col">error</th>
                </tr>
              </thead>
              <tbody>
                {attempts.map((a, i) => (
                  <tr key={i}>
                    <th scope="row">{a.attempt}</th>
                    <td>{a.workerId ?? '—'}</td>
                    <td>
                      <Time iso={a.startedAt} />
                    </td>
                    <td>{a.outcome}</td>
                    <td>
                      <Time iso={a.endedAt} />
                    </td>
                    <td class="error-text">{a.error ?? ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      <section aria-labelledby="timeline">
        <h2 id="timeline">Timeline</h2>
        <ol class="timeline" aria-label="Events of this run, oldest first">
          {run.events.map((event) => (
            <li key={event.revision}>
              <span class="event-type">{event.type}</span>
              <span class="event-meta">
                <Time iso={event.recordedAt} /> · by <span class="actor">{event.actor ?? 'unknown'}</span> · revision{' '}
                {event.revision}
              </span>
              <span class="event-summary">{eventSummary(event)}</span>
            </li>
          ))}
        </ol>
      </section>

      <section aria-labelledby="payload">
        <h2 id="payload">Payload</h2>
        <PayloadView value={run.payload} label="Payload (JSON)" />
      </section>
    </>
  );
}
