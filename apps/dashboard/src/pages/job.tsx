import { useState } from 'preact/hooks';
import { RUN_STATES, type RunState } from '@chronicle/domain/vocabulary';
import { ApiError, describeError, graphql } from '../api/graphql-client';
import { JOB, PAUSE_JOB, RESUME_JOB, type JobData } from '../api/operations';
import { ErrorNote } from '../components/notes';
import { PayloadView } from '../components/payload-view';
import { RunsTable } from '../components/runs-table';
import { formatRelative } from '../format';
import { Time } from '../components/time';
import { useApi } from '../use-api';

const RECENT_RUNS = 50;

/** A job: its definition, paused flag with pause/resume, its next 10 fire times and its recent runs by state. */
export function Job({ token, name }: { token: string; name: string }) {
  const [state, setState] = useState<RunState | ''>('');
  const [acting, setActing] = useState(false);
  const [actionError, setActionError] = useState<string | undefined>(undefined);
  const loaded = useApi(
    (signal) => graphql<JobData>(token, JOB, { name, state: state || null, first: RECENT_RUNS }, signal),
    [token, name, state],
  );

  if (loaded.data?.job === null || isRefusal(loaded.error))
    return (
      <>
        <h1 tabIndex={-1}>Job {name}</h1>
        <p class="error" role="alert">
          No job {name} for this token: it does not exist, or it belongs to another team.
        </p>
      </>
    );
  const job = loaded.data?.job;
  if (job === undefined)
    return (
      <>
        <h1 tabIndex={-1}>Job {name}</h1>
        <ErrorNote error={loaded.error} />
        {loaded.loading && <p>Loading…</p>}
      </>
    );

  const togglePaused = async (): Promise<void> => {
    setActing(true);
    setActionError(undefined);
    try {
      await graphql(token, job.paused ? RESUME_JOB : PAUSE_JOB, { name: job.name });
      loaded.reload();
    } catch (err) {
      setActionError(describeError(err));
    } finally {
      setActing(false);
    }
  };
  const runs = job.runs.edges.map((e) => e.node);
  // The payload apart, capped: it may be 256 KB, and the rest of the definition should not hide behind it.
  const { payload: _payload, ...definition } = job.definition;
  const counts = RUN_STATES.map((s) => [s, runs.filter((r) => r.state === s).length] as const).filter(([, n]) => n > 0);

  return (
    <>
      <h1 tabIndex={-1}>Job {job.name}</h1>
      <dl class="facts">
        <dt>team</dt>
        <dd>{job.team}</dd>
        <dt>queue</dt>
        <dd>{job.queue}</dd>
        <dt>priority</dt>
        <dd>{job.priority}</dd>
        <dt>version</dt>
        <dd>{job.version}</dd>
        <dt>dry run</dt>
        <dd data-testid="dry-run">
          {job.definition['dryRun'] === true ? 'yes: its handlers log what they would do, with no effects' : 'no'}
        </dd>
        <dt>unique runs</dt>
        <dd data-testid="unique">{uniqueRule(job.definition['unique'])}</dd>
        <dt>concurrency</dt>
        <dd data-testid="concurrency">{concurrencyRule(job.definition)}</dd>
        <dt>rate</dt>
        <dd data-testid="rate">{rateRule(job.definition)}</dd>
        <dt>order per key</dt>
        <dd data-testid="ordering">{orderingRule(job.definition['orderingOnRetry'])}</dd>
        <dt>debounce</dt>
        <dd data-testid="debounce">{debounceRule(job.definition['debounce'])}</dd>
        <dt>paused</dt>
        <dd>
          <span data-testid="paused">{job.paused ? 'yes: its runs are neither leased nor materialised' : 'no'}</span>{' '}
          <button type="button" onClick={togglePaused} disabled={acting}>
            {job.paused ? 'Resume job' : 'Pause job'}
          </button>
        </dd>
      </dl>
      {actionError !== undefined && (
        <p class="error" role="alert">
          {actionError}
        </p>
      )}
      <section aria-labelledby="fire-times">
        <h2 id="fire-times">Next 10 fire times</h2>
        {job.nextFireTimes.length === 0 ? (
          <p>No schedule: this job runs when a run is enqueued.</p>
        ) : (
          <ol class="fire-times">
            {job.nextFireTimes.map((t) => (
              <li key={t}>
                <Time iso={t} /> <span class="muted">({formatRelative(t)})</span>
              </li>
            ))}
          </ol>
        )}
      </section>
      <section aria-labelledby="recent-runs">
        <div class="section-head">
          <h2 id="recent-runs">Recent runs</h2>
          <label class="inline">
            State{' '}
            <select value={state} onChange={(e) => setState((e.target as HTMLSelectElement).value as RunState | '')}>
              <option value="">every state</option>
              {RUN_STATES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </label>
        </div>
        {counts.length > 0 && (
          <p class="counts">
            {counts.map(([s, n]) => (
              <span key={s}>
                {s}: {n}
              </span>
            ))}
          </p>
        )}
        <ErrorNote error={loaded.error} />
        <RunsTable
          runs={runs}
          caption={`The latest ${RECENT_RUNS} runs of ${job.name}`}
          empty="No runs in this state."
        />
      </section>
      <section aria-labelledby="definition">
        <h2 id="definition">Definition</h2>
        <PayloadView value={definition} label="Definition, without its payload (JSON)" />
        {'payload' in job.definition && (
          <PayloadView value={job.definition['payload']} label="Payload of its runs (JSON)" />
        )}
      </section>
    </>
  );
}

/** Another team's job answers like a job that does not exist (as in REST): not-found, or forbidden. */
export function isRefusal(error: unknown): boolean {
  return error instanceof ApiError && (error.code === 'not-found' || error.code === 'forbidden');
}

/** How long a run enqueued with a unique key holds it, by the job's rule (absent: while it waits). */
function uniqueRule(rule: unknown): string {
  const { scope, seconds } = (rule ?? {}) as { scope?: string; seconds?: number };
  if (scope === 'for') return `a run holds its key for ${String(seconds)} s from its enqueue`;
  if (scope === 'while-not-finished') return 'a run holds its key until it finishes';
  return 'a run holds its key while it waits';
}

/** A job's rate limits: its own, and each concurrency key's (absent: none). */
function rateRule(definition: Record<string, unknown>): string {
  const text = (rate: unknown): string | undefined => {
    if (rate === undefined || rate === null) return undefined;
    const { limit, per, burst } = rate as { limit: number; per: string; burst?: number };
    return `at most ${limit} per ${per}${burst === undefined ? '' : `, ${burst} at once`}`;
  };
  const job = text(definition['rate']);
  const key = text(definition['keyRate']);
  if (job === undefined && key === undefined) return 'no limit';
  return [job, key === undefined ? undefined : `${key} per concurrency key`].filter(Boolean).join('; ');
}

/** What a failed run of an ordering key with retries left does to its key (absent: hold). */
function orderingRule(onRetry: unknown): string {
  return onRetry === 'skip'
    ? "a failed run's retry waits its turn; the key's later runs go on"
    : 'a failed run holds its key until it succeeds or dies';
}

/** How long a run enqueued with a debounce key waits after the newest enqueue of its key (absent: no debounce). */
function debounceRule(debounce: unknown): string {
  const { seconds } = (debounce ?? {}) as { seconds?: number };
  if (typeof seconds !== 'number') return 'none: enqueues may not name a debounce key';
  return `a run waits ${seconds} s after the newest enqueue of its key, with its payload`;
}

/** How many of a job's runs may be leased at once: in all (`concurrency`) and per concurrency key. */
function concurrencyRule(definition: Record<string, unknown>): string {
  const all =
    typeof definition['concurrency'] === 'number' ? `at most ${definition['concurrency']} leased` : 'no limit';
  const perKey = typeof definition['perKeyConcurrency'] === 'number' ? definition['perKeyConcurrency'] : 1;
  return `${all}; ${perKey} per concurrency key`;
}
