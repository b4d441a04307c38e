/**
 * The chaos run's verdict, from the event log alone (plus what the harness itself saw: the answers
 * its producer got, the executions its workers recorded, the takeovers it timed). Pure: the run
 * hands it everything, so a test can hand it a log with a fault in it.
 */
import { quantile } from '../table';
import type { Takeover } from './takeover-monitor';

/** The part of a recorded event the checks read. */
export interface LoggedEvent {
  readonly streamId: string;
  readonly type: string;
  readonly data: Readonly<Record<string, unknown>>;
}

/** A handler a worker started: the run and the lease it ran under. */
export interface Execution {
  readonly runId: string;
  readonly fencingToken: number;
}

/** An enqueue the producer sent, and the run its answer named (none: never answered 2xx). */
export interface Enqueue {
  readonly idempotencyKey: string;
  readonly runIds: readonly string[];
}

export interface ChaosInput {
  readonly events: readonly LoggedEvent[];
  /** Faults and producer stop here; every run due before it must end. */
  readonly end: Date;
  /** The cron jobs (every minute, no jitter) and the first fire time every one of them must have. */
  readonly cron: { readonly jobs: readonly string[]; readonly from: Date };
  readonly executions: readonly Execution[];
  readonly enqueues: readonly Enqueue[];
  /** Kill (or stop) of a shard's owner to the first pass of its next owner, one per shard taken. */
  readonly takeovers: readonly Takeover[];
  /** Shards whose owner was killed or stopped and that no other node had served by the end. */
  readonly takeoversMissing: number;
  /** Rows that differ between the read models and a fresh rebuild from the log. */
  readonly rebuildDifferences: readonly string[];
  /** Whether the fault of restarting PostgreSQL was done; why not, if not. */
  readonly postgresRestart: { readonly done: true } | { readonly done: false; readonly why: string };
  readonly faults: { readonly kills: number; readonly stops: number };
}

export interface Check {
  readonly name: string;
  readonly value: string;
  /** A violation: the run exits non-zero. */
  readonly violated: boolean;
  /** What broke it, a few examples. */
  readonly examples: readonly string[];
}

const TERMINAL = new Set(['RunSucceeded', 'RunDead', 'RunCancelled', 'RunDiscarded']);
/** What ends a lease besides its expiry. */
const LEASE_ENDS = new Set(['RunSucceeded', 'RunFailed', 'RunCancelled', 'RunDead']);
const SCHEDULED_BY_CRON = new Set(['schedule', 'catch_up']);
const EXAMPLES = 5;
const MINUTE_MS = 60_000;

interface RunHistory {
  readonly runId: string;
  readonly events: LoggedEvent[];
}

export function reconcile(input: ChaosInput): Check[] {
  const runs = runHistories(input.events);
  return [
    terminalBeforeEnd(runs, input.end),
    fencingTokensOnce(runs),
    cronFiresOnce(runs, input.cron, input.end),
    ...executionsFollowExpiry(runs, input.executions),
    acknowledgedKept(runs, input.enqueues),
    takeovers(input.takeovers, 'killed'),
    takeovers(input.takeovers, 'stopped'),
    {
      name: 'shards of a killed or stopped owner not served again',
      value: String(input.takeoversMissing),
      violated: input.takeoversMissing > 0,
      examples: [],
    },
    {
      name: 'read models equal a rebuild from the log',
      value: input.rebuildDifferences.length === 0 ? 'equal' : `${input.rebuildDifferences.length} rows differ`,
      violated: input.rebuildDifferences.length > 0,
      examples: input.rebuildDifferences.slice(0, EXAMPLES),
    },
    {
      name: 'faults: processes killed / stopped past the lease',
      value: `${input.faults.kills} / ${input.faults.stops}`,
      violated: input.faults.kills === 0,
      examples: input.faults.kills === 0 ? ['no process was killed: the run proved nothing'] : [],
    },
    {
      name: 'fault: PostgreSQL restarted',
      value: input.postgresRestart.done ? 'once' : `no (${input.postgresRestart.why})`,
      violated: false,
      examples: [],
    },
  ];
}

export const violations = (checks: readonly Check[]): Check[] => checks.filter((c) => c.violated);

/** Each run stream's events, in log order. */
function runHistories(events: readonly LoggedEvent[]): Map<string, RunHistory> {
  const runs = new Map<string, RunHistory>();
  for (const event of events) {
    if (!event.streamId.startsWith('run-')) continue;
    const runId = event.streamId.slice('run-'.length);
    let run = runs.get(runId);
    if (run === undefined) runs.set(runId, (run = { runId, events: [] }));
    run.events.push(event);
  }
  return runs;
}

const scheduledOf = (run: RunHistory): LoggedEvent | undefined => run.events.find((e) => e.type === 'RunScheduled');
const dueAtOf = (run: RunHistory): number => Date.parse(String(scheduledOf(run)?.data['dueAt']));
const tokenOf = (event: LoggedEvent): number => Number(event.data['fencingToken']);

function terminalBeforeEnd(runs: ReadonlyMap<string, RunHistory>, end: Date): Check {
  let due = 0;
  const open: string[] = [];
  for (const run of runs.values()) {
    if (!(dueAtOf(run) < end.getTime())) continue;
    due++;
    const last = run.events[run.events.length - 1]!;
    if (!TERMINAL.has(last.type)) open.push(`${run.runId}: last ${last.type}`);
  }
  return {
    name: 'runs due before the end, all terminal',
    value: `${due - open.length} of ${due}`,
    violated: open.length > 0,
    examples: open.slice(0, EXAMPLES),
  };
}

function fencingTokensOnce(runs: ReadonlyMap<string, RunHistory>): Check {
  let leases = 0;
  const twice: string[] = [];
  for (const run of runs.values()) {
    const seen = new Set<number>();
    for (const event of run.events) {
      if (event.type !== 'RunLeased') continue;
      leases++;
      const token = tokenOf(event);
      if (seen.has(token)) twice.push(`${run.runId}: fencing token ${token} granted twice`);
      seen.add(token);
    }
  }
  return {
    name: 'leases granted, no fencing token twice for a run',
    value: `${leases}, ${twice.length} twice`,
    violated: twice.length > 0,
    examples: twice.slice(0, EXAMPLES),
  };
}

function cronFiresOnce(runs: ReadonlyMap<string, RunHistory>, cron: ChaosInput['cron'], end: Date): Check {
  const fires = new Map<string, number>();
  for (const run of runs.values())
    for (const event of run.events) {
      if (event.type !== 'RunScheduled' || !SCHEDULED_BY_CRON.has(String(event.data['source']))) continue;
      const key = `${String(event.data['job'])} @ ${new Date(String(event.data['dueAt'])).toISOString()}`;
      fires.set(key, (fires.get(key) ?? 0) + 1);
    }
  const problems: string[] = [];
  let expected = 0;
  for (const job of cron.jobs)
    for (let at = cron.from.getTime(); at < end.getTime(); at += MINUTE_MS) {
      expected++;
      const key = `${job} @ ${new Date(at).toISOString()}`;
      const count = fires.get(key) ?? 0;
      if (count !== 1) problems.push(`${key}: materialised ${count} times`);
    }
  // Doubles outside the window count too.
  for (const [key, count] of fires)
    if (count > 1 && !problems.some((p) => p.startsWith(key))) problems.push(`${key}: materialised ${count} times`);
  return {
    name: 'cron fires in the window, each materialised once',
    value: `${expected - problems.length} of ${expected}`,
    violated: problems.length > 0,
    examples: problems.slice(0, EXAMPLES),
  };
}

/**
 * A second lease of a run comes only after the first ended: it expired (then both may have run: a
 * duplicate execution, counted) or it failed (a retry). Each execution a worker started was under a
 * lease the log granted, and no lease ran twice.
 */
function executionsFollowExpiry(runs: ReadonlyMap<string, RunHistory>, executions: readonly Execution[]): Check[] {
  const unordered: string[] = [];
  const expiredBefore = new Map<string, Set<number>>(); // run -> tokens whose lease expired before the next lease
  for (const run of runs.values()) {
    let open: number | undefined; // the token of the lease not yet ended
    for (const event of run.events) {
      if (event.type === 'RunLeased') {
        if (open !== undefined)
          unordered.push(`${run.runId}: leased again (token ${tokenOf(event)}) while ${open} held`);
        open = tokenOf(event);
      } else if (open !== undefined && event.type === 'LeaseExpired' && tokenOf(event) === open) {
        let tokens = expiredBefore.get(run.runId);
        if (tokens === undefined) expiredBefore.set(run.runId, (tokens = new Set()));
        tokens.add(open);
        open = undefined;
      } else if (LEASE_ENDS.has(event.type)) open = undefined;
    }
  }
  const byRun = new Map<string, number[]>();
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const execution of executions) {
    const key = `${execution.runId}#${execution.fencingToken}`;
    if (seen.has(key)) problems.push(`${execution.runId}: the lease with token ${execution.fencingToken} ran twice`);
    seen.add(key);
    const tokens = byRun.get(execution.runId) ?? [];
    tokens.push(execution.fencingToken);
    byRun.set(execution.runId, tokens);
  }
  let duplicates = 0;
  for (const [runId, tokens] of byRun) {
    const granted = new Set(
      (runs.get(runId)?.events ?? []).filter((e) => e.type === 'RunLeased').map((e) => tokenOf(e)),
    );
    const ran = [...new Set(tokens)].sort((a, b) => a - b);
    for (const token of ran)
      if (!granted.has(token)) problems.push(`${runId}: ran under token ${token}, which the log never granted`);
    // Each later execution re-ran the run; it is a duplicate when the earlier lease expired (a retry
    // after a failure is not).
    for (let i = 1; i < ran.length; i++) if (expiredBefore.get(runId)?.has(ran[i - 1]!) === true) duplicates++;
  }
  return [
    {
      name: 'leases of a run one after another',
      value: unordered.length === 0 ? 'yes' : `${unordered.length} overlapping`,
      violated: unordered.length > 0,
      examples: unordered.slice(0, EXAMPLES),
    },
    {
      name: 'executions / duplicates, each after a LeaseExpired',
      value: `${executions.length} / ${duplicates}`,
      violated: problems.length > 0,
      examples: problems.slice(0, EXAMPLES),
    },
  ];
}

function acknowledgedKept(runs: ReadonlyMap<string, RunHistory>, enqueues: readonly Enqueue[]): Check {
  const problems: string[] = [];
  let acknowledged = 0;
  for (const enqueue of enqueues) {
    const named = [...new Set(enqueue.runIds)];
    if (named.length > 0) acknowledged++;
    if (named.length > 1) problems.push(`Idempotency-Key ${enqueue.idempotencyKey}: answered with ${named.join(', ')}`);
    for (const runId of named)
      if (runs.get(runId) === undefined || scheduledOf(runs.get(runId)!) === undefined)
        problems.push(`${runId} (Idempotency-Key ${enqueue.idempotencyKey}): acknowledged, not in the log`);
  }
  return {
    name: 'enqueues acknowledged, each one run in the log',
    value: `${acknowledged} of ${enqueues.length} sent`,
    violated: problems.length > 0,
    examples: problems.slice(0, EXAMPLES),
  };
}

function takeovers(all: readonly Takeover[], fault: Takeover['fault']): Check {
  const times = all.filter((t) => t.fault === fault).map((t) => t.ms);
  const at = (q: number): string => (times.length === 0 ? '-' : `${(quantile(times, q) / 1000).toFixed(1)} s`);
  return {
    name: `shard takeovers, owner ${fault}: count, p50, max`,
    value: `${times.length}, ${at(0.5)}, ${at(1)}`,
    violated: false,
    examples: [],
  };
}
