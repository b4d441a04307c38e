import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline/promises';
import { Command } from 'commander';
import { apiTarget, callApi, getJson, queryOf, sendJson, type ApiTarget } from './api-client';
import { CliError, EXIT, positiveInteger, type Output } from './output';

interface Page<T> {
  readonly items: T[];
  readonly nextCursor: string | null;
}
type Row = Record<string, unknown>;

/**
 * The commands of teams and auditors, against a running server's API (CHRONICLE_URL and
 * CHRONICLE_TOKEN, or --url and --token): jobs, runs, dead letters, the audit trail, backfills.
 */
export function apiCommands(output: Output, flags: () => { url?: string; token?: string }): Command[] {
  const target = (): ApiTarget => apiTarget(flags());
  const encode = encodeURIComponent;
  /** A page as a table, and where the next one starts (stderr: stdout stays the result). */
  const printPage = <T>(page: Page<T>, row: (item: T) => Row): void => {
    if (output.json) output.raw(page);
    else {
      output.table(page.items.map(row));
      if (page.nextCursor !== null) output.note(`more: --cursor ${page.nextCursor}`);
    }
  };
  const pageOptions = (command: Command): Command =>
    command
      .option('--limit <n>', 'items per page (1-500)', positiveInteger, 50)
      .option('--cursor <cursor>', 'the page after this');

  const jobs = new Command('jobs').description("a team's jobs: list, show, define, pause, resume, preview, versions");
  pageOptions(
    jobs
      .command('list')
      .description('the jobs, by name')
      .option('--queue <queue>')
      .option('--team <team>', 'the admin: one team'),
  ).action(async (o: { queue?: string; team?: string; limit: number; cursor?: string }) => {
    const page = await getJson<Page<Row>>(
      target(),
      `/v1/jobs${queryOf({ queue: o.queue, team: o.team, limit: o.limit, cursor: o.cursor })}`,
    );
    printPage(page, (j) => ({
      name: j['name'],
      team: j['team'],
      queue: j['queue'],
      priority: j['priority'],
      version: j['version'],
      paused: j['paused'],
      schedule: scheduleOf(j['schedule']),
    }));
  });
  jobs
    .command('show')
    .argument('<name>')
    .option('--as-of <instant>', 'as it was at this instant (ISO 8601)')
    .description('a job: its definition, version, paused flag')
    .action(async (name: string, o: { asOf?: string }) => {
      output.document(await getJson(target(), `/v1/jobs/${encode(name)}${queryOf({ asOf: o.asOf })}`));
    });
  jobs
    .command('define')
    .argument('<name>')
    .requiredOption('-f, --file <file.json>', 'the definition, as the body of PUT /v1/jobs/{name}')
    .description('define a job, or change its definition')
    .action(async (name: string, o: { file: string }) => {
      const definition = await readDefinition(o.file);
      const response = await callApi(target(), 'PUT', `/v1/jobs/${encode(name)}`, definition);
      const job = (await response.json()) as Row;
      output.result(
        job,
        `${response.status === 201 ? 'defined' : 'changed'} ${name}: version ${String(job['version'])}`,
      );
    });
  for (const action of ['pause', 'resume'] as const)
    jobs
      .command(action)
      .argument('<name>')
      .description(
        action === 'pause' ? 'stop leasing and materialising its runs' : 'lease and materialise its runs again',
      )
      .action(async (name: string) => {
        const job = await sendJson<Row>(target(), 'POST', `/v1/jobs/${encode(name)}:${action}`);
        output.result(job, `${name}: ${job['paused'] === true ? 'paused' : 'running'}`);
      });
  jobs
    .command('preview')
    .argument('<name>')
    .option('--count <n>', 'how many fire times (1-100)', positiveInteger, 10)
    .description('its next fire times, jitter included')
    .action(async (name: string, o: { count: number }) => {
      const { fireTimes } = await getJson<{ fireTimes: string[] }>(
        target(),
        `/v1/jobs/${encode(name)}/preview${queryOf({ count: o.count })}`,
      );
      if (output.json) output.raw({ fireTimes });
      else output.table(fireTimes.map((fireTime) => ({ fireTime })));
    });
  jobs
    .command('versions')
    .argument('<name>')
    .description('every version of its definition: who changed which field, and when')
    .action(async (name: string) => {
      const answer = await getJson<{ versions: Row[] }>(target(), `/v1/jobs/${encode(name)}/versions`);
      if (output.json) output.raw(answer);
      else
        output.table(
          answer.versions.map((v) => ({
            version: v['version'],
            definedAt: v['definedAt'],
            actor: v['actor'],
            changes: (v['changes'] as Array<{ field: string }>).map((c) => c.field).join(', '),
          })),
        );
    });
  jobs
    .command('backfill')
    .argument('<name>')
    .requiredOption('--from <instant>', 'the first fire time (inclusive)')
    .requiredOption('--to <instant>', 'the last fire time (exclusive)')
    .description('enqueue the runs of its schedule between two instants (once per fire time)')
    .action(async (name: string, o: { from: string; to: string }) => {
      const progress = output.progress(`backfilling ${name}`, undefined, 'runs');
      const answer = await sendJson<{ runs: Row[] }>(target(), 'POST', `/v1/jobs/${encode(name)}:backfill`, {
        from: o.from,
        to: o.to,
      });
      progress.update(answer.runs.length, 'done');
      progress.stop();
      const created = answer.runs.filter((r) => r['created'] === true).length;
      output.result(
        answer,
        `${answer.runs.length} fire times: ${created} runs enqueued, ${answer.runs.length - created} there already`,
      );
    });

  const runs = new Command('runs').description('runs: list, show (now or as of an instant), events');
  pageOptions(
    runs
      .command('list')
      .description('the runs, newest due first')
      .option('--job <job>')
      .option('--queue <queue>')
      .option('--state <state>')
      .option('--team <team>', 'the admin: one team'),
  ).action(
    async (o: { job?: string; queue?: string; state?: string; team?: string; limit: number; cursor?: string }) => {
      const page = await getJson<Page<Row>>(target(), `/v1/runs${queryOf({ ...o })}`);
      printPage(page, runRow);
    },
  );
  runs
    .command('enqueue')
    .argument('<job>')
    .option('--payload <json>', "the run's payload, JSON (default: the job's)")
    .option('--run-at <instant>', 'due at this instant (ISO 8601); default: now')
    .option('--delay <seconds>', 'due after this many seconds', positiveInteger)
    .option('--unique-key <key>', 'one run per key while the job\'s unique rule holds it (docs/api.md, "Unique runs")')
    .option('--if-duplicate <what>', 'existing (default): the run that holds the key; reject: fail naming it')
    .option('--concurrency-key <key>', "leased only while fewer than the job's perKeyConcurrency runs of this key are")
    .option('--ordering-key <key>', "the job's runs of this key are leased one at a time, in the order enqueued")
    .option(
      '--debounce-key <key>',
      'moves the waiting run of this key instead (the job\'s debounce; docs/api.md, "Debounced runs")',
    )
    .option('--idempotency-key <key>', 'the same key again answers the same run')
    .description('enqueue a run of a job; says whether it is new or the run there already')
    .action(
      async (
        job: string,
        o: {
          payload?: string;
          runAt?: string;
          delay?: number;
          uniqueKey?: string;
          ifDuplicate?: string;
          concurrencyKey?: string;
          orderingKey?: string;
          debounceKey?: string;
          idempotencyKey?: string;
        },
      ) => {
        const body = {
          ...(o.payload === undefined ? {} : { payload: parsePayload(o.payload) }),
          ...(o.runAt === undefined ? {} : { runAt: o.runAt }),
          ...(o.delay === undefined ? {} : { delaySeconds: o.delay }),
          ...(o.uniqueKey === undefined ? {} : { uniqueKey: o.uniqueKey }),
          ...(o.ifDuplicate === undefined ? {} : { ifDuplicate: o.ifDuplicate }),
          ...(o.concurrencyKey === undefined ? {} : { concurrencyKey: o.concurrencyKey }),
          ...(o.orderingKey === undefined ? {} : { orderingKey: o.orderingKey }),
          ...(o.debounceKey === undefined ? {} : { debounceKey: o.debounceKey }),
        };
        const headers: Record<string, string> =
          o.idempotencyKey === undefined ? {} : { 'Idempotency-Key': o.idempotencyKey };
        const response = await callApi(target(), 'POST', `/v1/jobs/${encode(job)}/runs`, body, headers);
        const run = (await response.json()) as Row;
        // A debounced run (new or moved) says when it is ready: each enqueue of its key moves that.
        const debounced = run['debounceKey'] != null;
        const found = debounced ? 'debounced:' : 'there already:';
        const ready = debounced ? `, ready at ${String(run['availableAt'])}` : '';
        output.result(
          run,
          `${response.status === 201 ? 'enqueued' : found} ${String(run['runId'])} (${String(run['state'])})${ready}`,
        );
      },
    );
  runs
    .command('show')
    .argument('<id>')
    .option('--as-of <instant>', 'as it was at this instant (ISO 8601)')
    .description('a run and its state')
    .action(async (id: string, o: { asOf?: string }) => {
      output.document(await getJson(target(), `/v1/runs/${encode(id)}${queryOf({ asOf: o.asOf })}`));
    });
  runs
    .command('as-of')
    .argument('<id>')
    .argument('<instant>', 'ISO 8601')
    .description('a run as it was at an instant: its events recorded by then, folded')
    .action(async (id: string, instant: string) => {
      output.document(await getJson(target(), `/v1/runs/${encode(id)}${queryOf({ asOf: instant })}`));
    });
  runs
    .command('events')
    .argument('<id>')
    .description('its whole history, oldest first, with who decided each step')
    .action(async (id: string) => {
      const { events } = await getJson<{ events: Row[] }>(target(), `/v1/runs/${encode(id)}/events`);
      if (output.json) output.raw({ events });
      else
        output.table(
          events.map((e) => ({
            revision: e['revision'],
            type: e['type'],
            recordedAt: e['recordedAt'],
            actor: (e['metadata'] as Row | undefined)?.['actor'],
          })),
        );
    });

  const dlq = new Command('dlq').description('dead letters: list, show, replay, discard (one, or many by a filter)');
  pageOptions(dlq.command('list').description('dead runs, newest first').option('--job <job>')).action(
    async (o: { job?: string; limit: number; cursor?: string }) => {
      const page = await getJson<Page<Row>>(
        target(),
        `/v1/dlq${queryOf({ job: o.job, limit: o.limit, cursor: o.cursor })}`,
      );
      printPage(page, (r) => ({
        runId: r['runId'],
        job: r['job'],
        attempt: r['attempt'],
        deadAt: r['deadAt'],
        reason: r['reason'],
        lastError: r['lastError'],
      }));
    },
  );
  dlq
    .command('show')
    .argument('<id>')
    .description('a dead run with its attempts')
    .action(async (id: string) => output.document(await getJson(target(), `/v1/dlq/${encode(id)}`)));
  for (const action of ['replay', 'discard'] as const)
    dlq
      .command(action)
      .argument('[id]', 'one dead run; without it, every one the filter selects')
      .option('--job <job>')
      .option('--error <text>', 'their last error contains this text (any case)')
      .option('--dead-after <instant>', 'dead at or after')
      .option('--dead-before <instant>', 'dead before')
      .option('--yes', 'do not ask for confirmation')
      .description(
        action === 'replay'
          ? 'back to ready with a fresh attempt budget'
          : 'out of the dead-letter view (history stays)',
      )
      .action(
        async (
          id: string | undefined,
          o: { job?: string; error?: string; deadAfter?: string; deadBefore?: string; yes?: boolean },
        ) => {
          if (id !== undefined) {
            const run = await sendJson<Row>(target(), 'POST', `/v1/dlq/${encode(id)}:${action}`);
            output.result(run, `${String(run['runId'])}: ${String(run['state'])}`);
            return;
          }
          const selection = { job: o.job, error: o.error, deadAfter: o.deadAfter, deadBefore: o.deadBefore };
          const counted = await sendJson<{ matched: number }>(target(), 'POST', `/v1/dlq:${action}`, {
            ...selection,
            dryRun: true,
          });
          if (counted.matched === 0) {
            output.result(counted, 'no dead run matches');
            return;
          }
          if (o.yes !== true) await confirm(`${action} ${counted.matched} dead runs?`);
          const progress = output.progress(
            `${action === 'replay' ? 'replaying' : 'discarding'}`,
            counted.matched,
            'runs',
          );
          const done = await streamBulk(target(), action, selection, (processed) => progress.update(processed, action));
          progress.stop();
          output.result(
            done,
            `${action === 'replay' ? 'replayed' : 'discarded'} ${done.acted} of ${done.matched}; ${done.skipped} changed meanwhile, skipped`,
          );
        },
      );

  const audit = pageOptions(
    new Command('audit')
      .description("the log's events with their actors, newest first")
      .option('--actor <actor>')
      .option('--type <type>', 'an event type, such as RunDead')
      .option('--stream <stream>', 'run-<id>, job-<name> or team-<id>')
      .option('--since <instant>')
      .option('--until <instant>')
      .option('--team <team>', 'the admin: one team'),
  ).action(async (o: Record<string, string | number | undefined>) => {
    const page = await getJson<Page<Row>>(target(), `/v1/audit${queryOf(o)}`);
    printPage(page, (e) => ({
      recordedAt: e['recordedAt'],
      type: e['type'],
      stream: e['streamId'],
      revision: e['revision'],
      actor: e['actor'],
    }));
  });

  const queues = new Command('queues').description("a queue's cap and rate on its leased runs (the admin's token)");
  queues
    .command('limits')
    .argument('<queue>')
    .option(
      '--concurrency <n>',
      'cap it: at most this many of its runs leased at once, every job and team together',
      positiveInteger,
    )
    .option('--no-cap', 'remove its cap')
    .option(
      '--rate <limit/per>',
      'at most this rate of its runs leased, such as 100/minute (per: second, minute, hour, day)',
    )
    .option(
      '--burst <n>',
      'with --rate: at most this many leased at once after a quiet spell (default: the limit)',
      positiveInteger,
    )
    .option('--no-rate', 'remove its rate')
    .description("show a queue's cap and rate, or change them (--concurrency, --no-cap, --rate, --no-rate)")
    .action(async (queue: string, o: { concurrency?: number; cap: boolean; rate?: string | false; burst?: number }) => {
      if (o.concurrency !== undefined && !o.cap)
        throw new CliError('give --concurrency or --no-cap, not both', EXIT.usage);
      if (o.burst !== undefined && typeof o.rate !== 'string')
        throw new CliError('--burst goes with --rate', EXIT.usage);
      const path = `/v1/queues/${encode(queue)}/limits`;
      const now = await getJson<Row>(target(), path);
      const changes = o.concurrency !== undefined || !o.cap || o.rate !== undefined;
      // A PUT sets both: what this call does not change is sent as it is.
      const limits = !changes
        ? now
        : await sendJson<Row>(target(), 'PUT', path, {
            concurrency: !o.cap ? null : (o.concurrency ?? now['concurrency']),
            rate: o.rate === false ? null : o.rate === undefined ? now['rate'] : rateOption(o.rate, o.burst),
          });
      const rate = limits['rate'] as { limit: number; per: string; burst?: number } | null;
      output.result(
        limits,
        `${queue}: ${limits['concurrency'] === null ? 'no cap' : `at most ${String(limits['concurrency'])} runs leased at once`}; ${
          rate === null
            ? 'no rate'
            : `at most ${rate.limit} per ${rate.per}${rate.burst === undefined ? '' : `, ${rate.burst} at once`}`
        }`,
      );
    });

  return [jobs, runs, dlq, audit, queues];
}

interface BulkOutcome {
  readonly matched: number;
  readonly processed: number;
  readonly acted: number;
  readonly skipped: number;
}

/** POST /v1/dlq:replay (or :discard) with its progress streamed, a line per batch. */
async function streamBulk(
  target: ApiTarget,
  action: 'replay' | 'discard',
  selection: Record<string, string | undefined>,
  onProgress: (processed: number) => void,
): Promise<BulkOutcome> {
  const response = await callApi(target, 'POST', `/v1/dlq:${action}`, selection, { accept: 'application/x-ndjson' });
  let buffered = '';
  let done: BulkOutcome | undefined;
  const decoder = new TextDecoder();
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = JSON.parse(buffered.slice(0, newline)) as {
        progress?: BulkOutcome;
        done?: BulkOutcome;
        problem?: { type: string; detail: string };
      };
      buffered = buffered.slice(newline + 1);
      if (line.progress !== undefined) onProgress(line.progress.processed);
      if (line.done !== undefined) done = line.done;
      if (line.problem !== undefined)
        throw new CliError(`${action} stopped: ${line.problem.type}: ${line.problem.detail}`, EXIT.failed);
    }
  }
  if (done === undefined)
    throw new CliError(`${action}: the server stopped answering before the end`, EXIT.unavailable);
  return done;
}

/** Asks on a terminal; elsewhere (a script) --yes is required. */
export async function confirm(question: string): Promise<void> {
  if (process.stdin.isTTY !== true) throw new CliError(`${question} Not a terminal: add --yes to go ahead`, EXIT.usage);
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  const answer = await prompt.question(`${question} [y/N] `);
  prompt.close();
  if (!/^y(es)?$/i.test(answer.trim())) throw new CliError('nothing done', EXIT.failed);
}

async function readDefinition(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, EXIT.usage);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new CliError(`${file} is not JSON: ${(err as Error).message}`, EXIT.usage);
  }
}

function runRow(r: Row): Row {
  return {
    runId: r['runId'],
    job: r['job'],
    state: r['state'],
    dueAt: r['dueAt'],
    attempt: r['attempt'],
    queue: r['queue'],
    priority: r['priority'],
  };
}

function scheduleOf(schedule: unknown): string | null {
  if (schedule === null || typeof schedule !== 'object') return null;
  const s = schedule as { cron?: string; rrule?: string; timeZone?: string };
  return `${s.cron ?? s.rrule ?? '?'} ${s.timeZone ?? ''}`.trim();
}

/** --payload's JSON, or a usage error naming it. */
function parsePayload(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new CliError(`--payload: not JSON: ${text}`, EXIT.usage);
  }
}

/** --rate 100/minute (and --burst) as the API takes a rate. */
function rateOption(value: string, burst: number | undefined): Row {
  const [, limit, per] = /^(\d{1,7})\/(second|minute|hour|day)$/.exec(value) ?? [];
  if (limit === undefined || per === undefined)
    throw new CliError(
      `--rate: ${value} is not a rate such as 100/minute (per: second, minute, hour, day)`,
      EXIT.usage,
    );
  return { limit: Number(limit), per, ...(burst === undefined ? {} : { burst }) };
}
