import type { RunSummary } from '../api/operations';
import { paths } from '../router';
import { Link } from './link';
import { DryRunBadge, StateBadge } from './state-badge';
import { Time } from './time';

export function RunsTable(props: { runs: readonly RunSummary[]; caption: string; empty: string }) {
  return (
    <div class="table-scroll">
      <table>
        <caption class="visually-hidden">{props.caption}</caption>
        <thead>
          <tr>
            <th scope="col">run</th>
            <th scope="col">state</th>
            <th scope="col">attempt</th>
            <th scope="col">due</th>
            <th scope="col">last error</th>
          </tr>
        </thead>
        <tbody>
          {props.runs.map((run) => (
            <tr key={run.id}>
              <th scope="row">
                <Link href={paths.run(run.id)}>{run.id}</Link>
              </th>
              <td>
                <StateBadge state={run.state} /> <DryRunBadge dryRun={run.dryRun} />
              </td>
              <td>{run.attempt}</td>
              <td>
                <Time iso={run.dueAt} />
              </td>
              <td class="error-text">{run.lastError ?? ''}</td>
            </tr>
          ))}
          {props.runs.length === 0 && (
            <tr>
              <td colSpan={5}>{props.empty}</td>
            </tr>
          )}
        </tbody>
      </table>
    </div>
  );
}
