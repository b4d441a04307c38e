import { useState } from 'preact/hooks';
import { graphql } from '../api/graphql-client';
import { JOBS, type JobSummary, type JobsData } from '../api/operations';
import { Link } from '../components/link';
import { ErrorNote } from '../components/notes';
import { paths } from '../router';
import { useApi } from '../use-api';

const PAGE_SIZE = 100;

/**
 * The jobs the token sees, a page at a time. Queue and team filter on the server (the API's
 * `jobs(queue:, team:)`); the name filter narrows the pages already loaded.
 */
export function Jobs({ token }: { token: string }) {
  const [filters, setFilters] = useState({ queue: '', team: '' });
  const [draft, setDraft] = useState(filters);
  const [nameFilter, setNameFilter] = useState('');
  const [after, setAfter] = useState<string | null>(null);
  const [earlier, setEarlier] = useState<readonly JobSummary[]>([]);

  const loaded = useApi(
    (signal) =>
      graphql<JobsData>(
        token,
        JOBS,
        { first: PAGE_SIZE, after, queue: filters.queue || null, team: filters.team || null },
        signal,
      ),
    [token, filters.queue, filters.team, after],
  );
  const page = loaded.data?.jobs;
  const jobs = [...earlier, ...(page?.edges.map((e) => e.node) ?? [])];
  const needle = nameFilter.trim().toLowerCase();
  const shown = needle === '' ? jobs : jobs.filter((j) => j.name.toLowerCase().includes(needle));

  const apply = (event: Event): void => {
    event.preventDefault();
    setEarlier([]);
    setAfter(null);
    setFilters({ queue: draft.queue.trim(), team: draft.team.trim() });
  };
  const more = (): void => {
    if (page?.pageInfo.endCursor == null) return;
    setEarlier(jobs);
    setAfter(page.pageInfo.endCursor);
  };

  return (
    <>
      <h1 tabIndex={-1}>Jobs</h1>
      <form class="filters" onSubmit={apply} role="search" aria-label="Filter jobs">
        <label>
          Name contains
          <input
            type="search"
            value={nameFilter}
            onInput={(e) => setNameFilter((e.target as HTMLInputElement).value)}
          />
        </label>
        <label>
          Queue
          <input
            value={draft.queue}
            onInput={(e) => setDraft({ ...draft, queue: (e.target as HTMLInputElement).value })}
          />
        </label>
        <label>
          Team
          <input
            value={draft.team}
            onInput={(e) => setDraft({ ...draft, team: (e.target as HTMLInputElement).value })}
          />
        </label>
        <button type="submit">Apply filters</button>
      </form>
      <ErrorNote error={loaded.error} />
      <div class="table-scroll">
        <table>
          <caption class="visually-hidden">Jobs</caption>
          <thead>
            <tr>
              <th scope="col">name</th>
              <th scope="col">team</th>
              <th scope="col">queue</th>
              <th scope="col">priority</th>
              <th scope="col">paused</th>
              <th scope="col">version</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((job) => (
              <tr key={job.name}>
                <th scope="row">
                  <Link href={paths.job(job.name)}>{job.name}</Link>
                </th>
                <td>{job.team}</td>
                <td>{job.queue}</td>
                <td>{job.priority}</td>
                <td>{job.paused ? 'paused' : 'no'}</td>
                <td>{job.version}</td>
              </tr>
            ))}
            {shown.length === 0 && (
              <tr>
                <td colSpan={6}>{loaded.loading ? 'Loading…' : 'No jobs match.'}</td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      {page?.pageInfo.hasNextPage === true && (
        <button type="button" onClick={more} disabled={loaded.loading}>
          Load more jobs
        </button>
      )}
    </>
  );
}
