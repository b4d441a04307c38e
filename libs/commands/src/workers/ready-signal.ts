import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Client, type Pool } from 'pg';
import type { PresentRun } from '@chronicle/domain';
import { LOGGER, PG_POOL, WakeSignal, type JsonLogger, type Queryable } from '@chronicle/platform';

/** The limited jobs, and the capped queues, this process's claims have seen, at most (a bound, never reached in practice). */
const MAX_LIMITED = 10_000;

/**
 * Wakes long-polling lease requests when runs become ready (enqueue, retry,
 * replay): this process's at once, and, through ReadyBroadcast, every other
 * process's on the same database. Runs that become ready by time passing are
 * found by the long-poll's timer at the next due time, and its short fallback
 * poll covers anything else.
 */
@Injectable()
export class ReadySignal extends WakeSignal<Wanting> {
  private publish: ((vacancies?: readonly Vacancy[]) => void) | undefined;
  /**
   * Jobs whose runs this process's claims found under a run limit, and queues with a cap: a run of theirs
   * that ends frees a place.
   */
  private readonly limitedJobs = new Set<string>();
  private readonly cappedQueues = new Set<string>();
  /** The next-token timers of wakeOneAt, by wantingKey. */
  private readonly tokenTimers = new Map<string, { readonly at: number; readonly timer: NodeJS.Timeout }>();

  /**
   * Moves each time runs became ready or places were freed, here or as another process announced: what a
   * claim read of the ready runs before may lack runs it would choose now (CandidateBuffer).
   */
  get epoch(): number {
    return this.changes;
  }
  private changes = 0;

  /** Runs became ready: wake this process's waiters and tell the other processes. */
  override notify(): void {
    this.changes++;
    super.notify();
    this.publish?.();
  }

  /** Jobs with a run limit and queues with a cap, as a claim found them (LockedRuns). */
  noteLimited(limits: { readonly limitedJobs: ReadonlySet<string>; readonly cappedQueues: ReadonlySet<string> }): void {
    for (const [known, found] of [
      [this.limitedJobs, limits.limitedJobs],
      [this.cappedQueues, limits.cappedQueues],
    ] as const) {
      if (known.size + found.size > MAX_LIMITED) known.clear();
      for (const name of found) known.add(name);
    }
  }

  /**
   * Runs a worker's decisions changed, once committed: they make runs leasable when one waits to be retried,
   * or when one held a place another waiting run may take now (a run of a concurrency key or an ordering key,
   * of a job with a run limit, or of a capped queue). A run held back by a limit is not polled for
   * (LeaseRunsHandler): this wakes its waiters. A freed place wakes one waiter of its queue and team, in each
   * process: twenty workers waiting for a job's one place, all woken, would take turns at the job's lock to
   * find one of them (or the worker that freed it, leasing again) had it.
   */
  decided(runs: readonly PresentRun[]): void {
    if (runs.some((run) => run.status === 'retry_wait')) return this.notify();
    const vacancies = runs
      .filter(
        ({ definition }) =>
          definition.concurrencyKey !== undefined ||
          definition.ordering !== undefined ||
          this.limitedJobs.has(definition.job) ||
          this.cappedQueues.has(definition.queue),
      )
      .map(({ definition: { queue, team } }) => ({ queue, team }));
    if (vacancies.length === 0) return;
    this.wakeFor(vacancies);
    this.publish?.(vacancies);
  }

  /**
   * Wakes one waiter wanting exactly these queues of this team when a rate's next token comes, at `at`: one
   * timer for all of this process's waiters held back by the bucket, where each waking at the token would
   * claim, and all but one find it taken. The woken one, having leased, sets the next (LeaseRunsHandler).
   */
  wakeOneAt(at: number, wanting: Wanting): void {
    const key = wantingKey(wanting);
    const set = this.tokenTimers.get(key);
    if (set !== undefined && set.at <= at + TOKEN_SLACK_MS) return;
    clearTimeout(set?.timer);
    const timer = setTimeout(
      () => {
        this.tokenTimers.delete(key);
        this.notifyOne((w) => w !== undefined && wantingKey(w) === key, TOKEN);
      },
      Math.max(0, at - Date.now()),
    );
    timer.unref();
    this.tokenTimers.set(key, { at, timer });
  }

  /** What another process announced, runs ready or places freed: this process's waiters only. */
  wakeHere(vacancies?: readonly Vacancy[]): void {
    if (vacancies !== undefined) return this.wakeFor(vacancies);
    this.changes++;
    super.notify();
  }

  /** How `notify` tells the other processes (ReadyBroadcast); none: this process only. */
  publishWith(publish: ((vacancies?: readonly Vacancy[]) => void) | undefined): void {
    this.publish = publish;
  }

  private wakeFor(vacancies: readonly Vacancy[]): void {
    this.changes++;
    for (const { queue, team } of vacancies)
      this.notifyOne((w) => w === undefined || (w.queues.includes(queue) && (w.team === null || w.team === team)));
  }
}

/** The reason of a relay woken by a rate's next token (ReadySignal.wakeOneAt). */
export const TOKEN = 'token';
/** Token times this close are one: each waiter computes the same instant, give or take its rounding. */
const TOKEN_SLACK_MS = 5;

function wantingKey({ queues, team }: Wanting): string {
  return `${team ?? ''}\u0000${[...queues].sort().join('\u0000')}`;
}

/** What a long-polling lease request waits for: runs of these queues, of this team (null: any team). */
export interface Wanting {
  readonly queues: readonly string[];
  readonly team: string | null;
}

/** A place freed in a queue for a team's runs. */
export interface Vacancy {
  readonly queue: string;
  readonly team: string;
}

/**
 * The PostgreSQL channel of "runs are ready": the payload names the process that sent it, and after a
 * space, when that is all that happened, the places freed (Vacancy[] as JSON).
 */
export const RUNS_READY_CHANNEL = 'chronicle_runs_ready';
/** Below PostgreSQL's limit on a notification's payload, in characters (each of ours is one byte or more). */
const MAX_PAYLOAD = 7_000;
/** Notifications of one process within this window go as one. */
const COALESCE_MS = 5;
/** After the listening connection broke, the next try. */
const RELISTEN_MS = 1000;

/** Announce ready runs to every process's long-polls (the scheduler's passes, for one). */
export async function notifyRunsReady(db: Queryable, sender: string, vacancies?: readonly Vacancy[]): Promise<void> {
  const places = vacancies === undefined ? '' : ` ${JSON.stringify(vacancies)}`;
  // A payload PostgreSQL would refuse (8,000 bytes) says "runs ready" instead: every waiter looks.
  const payload = sender.length + places.length < MAX_PAYLOAD ? sender + places : sender;
  await db.query({
    name: 'notify_runs_ready',
    text: 'SELECT pg_notify($1, $2)',
    values: [RUNS_READY_CHANNEL, payload],
  });
}

/** What is read from another process's payload: its sender, and its vacancies unless it said runs are ready. */
function parsePayload(payload: string): { sender: string; vacancies?: Vacancy[] } {
  const space = payload.indexOf(' ');
  if (space < 0) return { sender: payload };
  const sender = payload.slice(0, space);
  try {
    return { sender, vacancies: JSON.parse(payload.slice(space + 1)) as Vacancy[] };
  } catch {
    return { sender }; // not ours to read: every waiter looks
  }
}

/**
 * Long-polls woken across processes (several API processes behind one address): LISTEN on a
 * connection of its own, NOTIFY after the commit that made runs ready (coalesced, one per few
 * milliseconds). A broken connection is made again, and the waiters are woken then, since a
 * notification may have been missed meanwhile.
 */
@Injectable()
export class ReadyBroadcast implements OnModuleInit, OnModuleDestroy {
  readonly sender = `api-${randomUUID()}`;
  private client: Client | undefined;
  /** What the next notification says: runs ready (`vacancies` undefined), or these places freed; none pending while `undefined`. */
  private pending: { vacancies: Vacancy[] | undefined } | undefined;
  private stopped = false;
  private relisten: NodeJS.Timeout | undefined;

  constructor(
    @Inject(PG_POOL) private readonly pool: Pool,
    private readonly ready: ReadySignal,
    @Inject(LOGGER) private readonly logger: JsonLogger,
  ) {}

  async onModuleInit(): Promise<void> {
    this.ready.publishWith((vacancies) => this.publishSoon(vacancies));
    // Not listening yet is no reason not to start: the fallback poll finds other processes' runs.
    await this.listen().catch(() => undefined);
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.relisten);
    this.ready.publishWith(undefined);
    await this.client?.end().catch(() => undefined);
  }

  private publishSoon(vacancies?: readonly Vacancy[]): void {
    if (this.pending !== undefined) {
      if (vacancies === undefined) this.pending.vacancies = undefined;
      else this.pending.vacancies?.push(...vacancies);
      return;
    }
    this.pending = { vacancies: vacancies && [...vacancies] };
    setTimeout(() => {
      const { vacancies: freed } = this.pending!;
      this.pending = undefined;
      notifyRunsReady(this.pool, this.sender, freed).catch((err: unknown) =>
        this.logger.warn('could not announce ready runs to the other processes', { err }),
      );
    }, COALESCE_MS).unref();
  }

  private async listen(): Promise<void> {
    const client = new Client(this.pool.options);
    client.on('notification', (message) => {
      const { sender, vacancies } = parsePayload(message.payload ?? '');
      if (sender !== this.sender) this.ready.wakeHere(vacancies);
    });
    const lost = (err?: unknown): void => {
      if (this.client !== client) return;
      this.client = undefined;
      client.end().catch(() => undefined);
      if (this.stopped) return;
      this.logger.warn('the ready-runs listener lost its connection; listening again', { err });
      this.relisten = setTimeout(() => {
        // Woken once listening again: a notification may have gone by meanwhile. A failed try schedules the next.
        this.listen().then(
          () => this.ready.wakeHere(),
          () => undefined,
        );
      }, RELISTEN_MS);
    };
    client.on('error', lost);
    client.on('end', () => lost());
    this.client = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${RUNS_READY_CHANNEL}`);
    } catch (err) {
      lost(err);
      throw err;
    }
  }
}
