import { setTimeout as sleep } from 'node:timers/promises';
import { Command } from 'commander';
import { BULK_ACTIONS, BULK_STATUSES } from '@chronicle/domain/vocabulary';
import { apiTarget, getJson, queryOf, sendJson, type ApiTarget } from './api-client';
import { confirm } from './api-commands';
import { CliError, EXIT, positiveInteger, type Output } from './output';

type Row = Record<string, unknown>;

interface Operation {
  readonly id: string;
  readonly action: string;
  readonly status: (typeof BULK_STATUSES)[number];
  readonly matched: number;
  readonly processed: number;
  readonly acted: number;
  readonly skipped: number;
  readonly error: string | null;
}

/** How often the CLI reads an operation's progress while it runs. */
const POLL_MS = 250;

const DOING: Record<(typeof BULK_ACTIONS)[number], string> = {
  'cancel-runs': 'cancelling',
  'pause-jobs': 'pausing',
  'resume-jobs': 'resuming',
  'replay-dead': 'replaying',
  'discard-dead': 'discarding',
};

/**
 * `chronicle bulk <action>` (docs/cli.md, "Bulk operations"): the dry run's count and sample first, a
 * confirmation, then the operation's progress as a bar until it is done; Ctrl-C stops it (resumable with
 * `bulk resume <id>`). `bulk list`, `show`, `stop`, `resume` for the operations themselves.
 */
export function bulkCommand(output: Output, flags: () => { url?: string; token?: string }): Command {
  const target = (): ApiTarget => apiTarget(flags());
  const bulk = new Command('bulk').description(
    'cancel runs, pause or resume jobs, replay or discard dead runs by a filter: a dry run, then in batches',
  );
  for (const action of BULK_ACTIONS)
    bulk
      .command(action)
      .description(`${action.replace('-', ' ')} that the filter selects (the admin: --team, or every team)`)
      .option('--team <team>', "the admin: one team's")
      .option('--job <job>')
      .option('--queue <queue>')
      .option('--state <state>', 'cancel-runs: scheduled, ready or retry_wait')
      .option('--error <text>', 'their last error contains this text (any case)')
      .option('--due-after <instant>', 'cancel-runs: due at or after')
      .option('--due-before <instant>', 'cancel-runs: due before')
      .option('--dead-after <instant>', 'replay-dead, discard-dead: dead at or after')
      .option('--dead-before <instant>', 'replay-dead, discard-dead: dead before')
      .option('--yes', 'do not ask for confirmation')
      .option('--no-wait', 'start it and print its id, without following its progress')
      .action(async (o: Record<string, string | boolean | undefined>) => {
        const filter = Object.fromEntries(
          ['team', 'job', 'queue', 'state', 'error', 'dueAfter', 'dueBefore', 'deadAfter', 'deadBefore']
            .filter((field) => typeof o[field] === 'string')
            .map((field) => [field, o[field]]),
        );
        const preview = await sendJson<{ matched: number; sample: Row[] }>(target(), 'POST', '/v1/bulk-operations', {
          action,
          filter,
          dryRun: true,
        });
        if (preview.matched === 0) {
          output.result({ ...preview, action }, 'nothing matches');
          return;
        }
        if (!output.json) {
          output.table(preview.sample.map(sampleRow));
          if (preview.matched > preview.sample.length)
            output.note(`... and ${preview.matched - preview.sample.length} more`);
        }
        if (o['yes'] !== true) await confirm(`${action.replace('-', ' ')}: ${preview.matched} match. Go ahead?`);
        const started = await sendJson<Operation>(target(), 'POST', '/v1/bulk-operations', { action, filter });
        if (o['wait'] === false) {
          output.result(started, `started ${started.id}: ${started.matched} matched`);
          return;
        }
        await follow(output, target(), started);
      });
  bulk
    .command('list')
    .description('the operations, newest first')
    .option('--team <team>', 'the admin: one team')
    .option('--status <status>', BULK_STATUSES.join(', '))
    .option('--limit <n>', 'items per page (1-500)', positiveInteger, 50)
    .option('--cursor <cursor>', 'the page after this')
    .action(async (o: { team?: string; status?: string; limit: number; cursor?: string }) => {
      const page = await getJson<{ items: Operation[]; nextCursor: string | null }>(
        target(),
        `/v1/bulk-operations${queryOf({ team: o.team, status: o.status, limit: o.limit, cursor: o.cursor })}`,
      );
      if (output.json) output.raw(page);
      else {
        output.table(page.items.map(operationRow));
        if (page.nextCursor !== null) output.note(`more: --cursor ${page.nextCursor}`);
      }
    });
  bulk
    .command('show')
    .argument('<id>')
    .description('an operation and its progress')
    .action(async (id: string) =>
      output.document(await getJson(target(), `/v1/bulk-operations/${encodeURIComponent(id)}`)),
    );
  bulk
    .command('stop')
    .argument('<id>')
    .description('stop an operation after the batch under way (resumable)')
    .action(async (id: string) => {
      const operation = await sendJson<Operation>(
        target(),
        'POST',
        `/v1/bulk-operations/${encodeURIComponent(id)}:stop`,
      );
      output.result(operation, `${operation.id}: ${operation.status}, ${counts(operation)}`);
    });
  bulk
    .command('resume')
    .argument('<id>')
    .option('--no-wait', 'resume it without following its progress')
    .description('resume a stopped or failed operation from where it was')
    .action(async (id: string, o: { wait: boolean }) => {
      const operation = await sendJson<Operation>(
        target(),
        'POST',
        `/v1/bulk-operations/${encodeURIComponent(id)}:resume`,
      );
      if (!o.wait) output.result(operation, `${operation.id}: ${operation.status}, ${counts(operation)}`);
      else await follow(output, target(), operation);
    });
  return bulk;
}

/**
 * The operation's progress as a bar (plain lines when not on a terminal) until it is done, stopped or
 * failed. Ctrl-C asks the server to stop it after its batch: it can be resumed later.
 */
async function follow(output: Output, target: ApiTarget, started: Operation): Promise<void> {
  const doing = DOING[started.action as (typeof BULK_ACTIONS)[number]] ?? started.action;
  const progress = output.progress(`${started.id} ${doing}`, started.matched, 'items');
  let stopAsked = false;
  const onInterrupt = (): void => {
    if (stopAsked) return;
    stopAsked = true;
    void sendJson(target, 'POST', `/v1/bulk-operations/${started.id}:stop`).catch(() => undefined);
  };
  process.on('SIGINT', onInterrupt);
  let operation = started;
  try {
    for (;;) {
      progress.update(operation.processed, operation.status);
      if (['done', 'stopped', 'failed'].includes(operation.status)) break;
      await sleep(POLL_MS);
      operation = await getJson<Operation>(target, `/v1/bulk-operations/${started.id}`);
    }
  } finally {
    process.off('SIGINT', onInterrupt);
    progress.stop();
  }
  if (operation.status === 'failed')
    throw new CliError(
      `${operation.id} failed: ${operation.error ?? 'unknown error'} (${counts(operation)})`,
      EXIT.failed,
    );
  output.result(
    operation,
    operation.status === 'stopped'
      ? `${operation.id} stopped: ${counts(operation)}; go on with: chronicle bulk resume ${operation.id}`
      : `${operation.id} done: ${counts(operation)}`,
  );
}

function counts(o: Operation): string {
  return `${o.acted} acted on, ${o.skipped} skipped (changed meanwhile), ${o.processed} of ${o.matched} looked at`;
}

function sampleRow(item: Row): Row {
  return {
    id: item['id'],
    job: item['job'],
    team: item['team'],
    state: item['state'],
    at: item['deadAt'] ?? item['dueAt'],
    lastError: item['lastError'],
  };
}

function operationRow(o: Operation): Row {
  const more = o as unknown as Row;
  return {
    id: o.id,
    action: o.action,
    team: more['team'],
    status: o.status,
    matched: o.matched,
    processed: o.processed,
    acted: o.acted,
    skipped: o.skipped,
    createdAt: more['createdAt'],
  };
}
