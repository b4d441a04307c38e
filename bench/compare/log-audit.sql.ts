import type { Pool } from 'pg';
import { RunEventType, runStreamId } from '@chronicle/domain';
import { formatCount } from '../table';
import type { LogAudit, RunsCounted } from './queue-system';

/**
 * Speed bought by skipping the log must not count: after a scenario, every
 * run it sent must have its RunScheduled in the log, and every run whose
 * handler it saw start its RunLeased and RunSucceeded (the handlers do
 * nothing, and the workers stopped gracefully, completing what they had
 * started). The scenario's database holds nothing but its own runs, so
 * counting run streams by the events they hold is counting the runs.
 * One pass over the run streams, a flag per event type each.
 */
const RUN_STREAMS_SQL = `
  SELECT count(*) FILTER (WHERE scheduled) AS scheduled,
         count(*) FILTER (WHERE scheduled AND leased AND succeeded) AS completed
    FROM (SELECT bool_or(event_type = $2) AS scheduled,
                 bool_or(event_type = $3) AS leased,
                 bool_or(event_type = $4) AS succeeded
            FROM events
           WHERE es_stream_name(stream_key) LIKE $1
           GROUP BY stream_key) AS run_streams`;

/** Audits the log in `log` (the log's own database in split mode) against what the scenario counted. */
export async function auditRunLog(log: Pool, runs: RunsCounted): Promise<LogAudit> {
  const { rows } = await log.query<{ scheduled: string; completed: string }>(RUN_STREAMS_SQL, [
    runStreamId('%'),
    RunEventType.RunScheduled,
    RunEventType.RunLeased,
    RunEventType.RunSucceeded,
  ]);
  const notScheduled = Math.max(0, runs.sent - Number(rows[0]!.scheduled));
  const notCompleted = Math.max(0, runs.started - Number(rows[0]!.completed));
  const detail = [
    ...(notScheduled > 0 ? [`${formatCount(notScheduled)} of ${formatCount(runs.sent)} sent lack RunScheduled`] : []),
    ...(notCompleted > 0
      ? [`${formatCount(notCompleted)} of ${formatCount(runs.started)} started lack RunLeased or RunSucceeded`]
      : []),
  ].join(', ');
  return { checked: runs.sent, missing: notScheduled + notCompleted, detail: detail === '' ? 'complete' : detail };
}
