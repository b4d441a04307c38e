import { useState } from 'preact/hooks';
import { PRIORITIES, type Priority } from '@chronicle/domain/vocabulary';
import { graphql } from '../api/graphql-client';
import { OVERVIEW, type HistoryPoint, type OverviewData, type QueueStats } from '../api/operations';
import { ErrorNote, RefreshNote } from '../components/notes';
import { TimeChart, type ChartSeries } from '../components/time-chart';
import { formatDuration } from '../format';
import { useApi } from '../use-api';

/** The overview refreshes every 5 s (docs/operations.md, "The dashboard"). */
export const OVERVIEW_REFRESH_MS = 5000;
const HISTORY_MINUTES = 60;
/** ChronicleCriticalReadyTooOld (deploy/prometheus/alerts.yml): the oldest ready critical run above 60 s. */
const OLDEST_READY_ALERT_SECONDS = 60;

const PRIORITY_COLOURS: Readonly<Record<Priority, string>> = {
  critical: '#c0392b',
  default: '#1f6fb2',
  bulk: '#6b7f3a',
};

export function Overview({ token }: { token: string }) {
  const [queue, setQueue] = useState('');
  const loaded = useApi(
    (signal) => graphql<OverviewData>(token, OVERVIEW, { minutes: HISTORY_MINUTES, queue: queue || null }, signal),
    [token, queue],
    OVERVIEW_REFRESH_MS,
  );
  const queues = loaded.data?.queues ?? [];
  const queueNames = [...new Set(queues.map((q) => q.queue))].sort();
  const shown = queues.filter((q) => queue === '' || q.queue === queue).sort(byQueueAndPriority);

  return (
    <>
      <div class="page-head">
        <h1 tabIndex={-1}>Overview</h1>
        <RefreshNote loaded={loaded} everyMs={OVERVIEW_REFRESH_MS} />
      </div>
      <ErrorNote error={loaded.error} />
      <section aria-labelledby="queues-heading">
        <div class="section-head">
          <h2 id="queues-heading">Queues</h2>
          <label class="inline">
            Queue{' '}
            <select value={queue} onChange={(e) => setQueue((e.target as HTMLSelectElement).value)}>
              <option value="">all queues</option>
              {queueNames.map((name) => (
                <option key={name} value={name}>
                  {name}
                </option>
              ))}
            </select>
          </label>
        </div>
        <div class="table-scroll">
          <table class="numbers">
            <caption class="visually-hidden">Runs per queue and priority, by state</caption>
            <thead>
              <tr>
                <th scope="col">queue</th>
                <th scope="col">priority</th>
                <th scope="col">ready</th>
                <th scope="col">leased</th>
                <th scope="col">retry_wait</th>
                <th scope="col">dead</th>
                <th scope="col">oldest ready</th>
                <th scope="col" title="the queue's cap on its leased runs, all teams and priorities together">
                  queue cap
                </th>
                <th scope="col" title="the queue's rate of leased runs, all teams and priorities together">
                  queue rate
                </th>
              </tr>
            </thead>
            <tbody>
              {shown.length === 0 && (
                <tr>
                  <td colSpan={9}>
                    {loaded.loading && loaded.data === undefined ? 'Loading…' : 'No runs in any queue.'}
                  </td>
                </tr>
              )}
              {shown.map((q) => (
                <tr key={`${q.queue}/${q.priority}`}>
                  <th scope="row">{q.queue}</th>
                  <td>{q.priority}</td>
                  <td>{q.ready}</td>
                  <td>{q.leased}</td>
                  <td>{q.retryWait}</td>
                  <td>{q.dead}</td>
                  <td
                    class={
                      q.priority === 'critical' && (q.oldestReadyAgeSeconds ?? 0) > OLDEST_READY_ALERT_SECONDS
                        ? 'alert'
                        : undefined
                    }
                  >
                    {formatDuration(q.oldestReadyAgeSeconds)}
                  </td>
                  <td>{q.concurrencyLimit ?? '—'}</td>
                  <td data-testid="queue-rate">
                    {q.rateLimit === null ? '—' : `${q.rateLimit.limit} per ${q.rateLimit.per}`}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
      <Charts history={loaded.data?.queueHistory ?? []} />
    </>
  );
}

const LAG_SERIES: readonly ChartSeries[] = PRIORITIES.flatMap((p) => [
  { label: `${p} p99`, color: PRIORITY_COLOURS[p] },
  { label: `${p} p50`, color: PRIORITY_COLOURS[p], dashed: true },
]);
const THROUGHPUT_SERIES: readonly ChartSeries[] = [
  { label: 'succeeded', color: '#2e7d32' },
  { label: 'failed', color: '#c0392b', dashed: true },
];
const TROUBLE_SERIES: readonly ChartSeries[] = [
  { label: 'lease expiries', color: '#b26a00' },
  { label: 'new dead runs', color: '#7b1fa2', dashed: true },
];

function Charts({ history }: { history: readonly HistoryPoint[] }) {
  const minutes = lastMinutes(HISTORY_MINUTES);
  const at = new Map<string, HistoryPoint>(history.map((h) => [`${Date.parse(h.minute) / 1000}/${h.priority}`, h]));
  const point = (t: number, p: Priority): HistoryPoint | undefined => at.get(`${t}/${p}`);
  const sum = (t: number, pick: (h: HistoryPoint) => number): number =>
    PRIORITIES.reduce((total, p) => total + (point(t, p) === undefined ? 0 : pick(point(t, p)!)), 0);
  const seconds = (v: number): string => formatDuration(v);
  const perMinute = (v: number): string => String(Math.round(v));
  return (
    <section aria-labelledby="charts-heading">
      <h2 id="charts-heading">Last hour</h2>
      <div class="charts">
        <TimeChart
          title="Schedule lag (lease time − due time), p99 and p50 per priority"
          unit="seconds"
          times={minutes}
          series={LAG_SERIES}
          values={PRIORITIES.flatMap((p) => [
            minutes.map((t) => point(t, p)?.lagP99Seconds ?? null),
            minutes.map((t) => point(t, p)?.lagP50Seconds ?? null),
          ])}
          format={seconds}
          dots
        />
        <TimeChart
          title="Throughput"
          unit="runs per minute"
          times={minutes}
          series={THROUGHPUT_SERIES}
          values={[minutes.map((t) => sum(t, (h) => h.succeeded)), minutes.map((t) => sum(t, (h) => h.failed))]}
          format={perMinute}
          integer
        />
        <TimeChart
          title="Lease expiries and new dead runs"
          unit="per minute"
          times={minutes}
          series={TROUBLE_SERIES}
          values={[minutes.map((t) => sum(t, (h) => h.leaseExpired)), minutes.map((t) => sum(t, (h) => h.dead))]}
          format={perMinute}
          integer
        />
      </div>
    </section>
  );
}

/** The starts of the last `count` whole minutes, oldest first, in Unix seconds. */
function lastMinutes(count: number): number[] {
  const now = Math.floor(Date.now() / 60_000) * 60;
  return Array.from({ length: count }, (_, i) => now - (count - 1 - i) * 60);
}

function byQueueAndPriority(a: QueueStats, b: QueueStats): number {
  return a.queue.localeCompare(b.queue) || PRIORITIES.indexOf(a.priority) - PRIORITIES.indexOf(b.priority);
}
