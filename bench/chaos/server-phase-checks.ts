/**
 * The chaos run's phase of run servers killed, promoted and moved (chaos.ts, server-faults.ts): the
 * servers' logs merged into one for reconcile.ts, and the phase's own rows of the table. Pure, as
 * reconcile.ts: the run hands it what it read and what its faults did.
 */
import type { Check, LoggedEvent } from './reconcile';

/** An event as one server's log holds it: its id and revision tell a copy of it on another server. */
export interface ServerEvent extends LoggedEvent {
  readonly id: string;
  readonly revision: bigint;
}

/** One server's log, by the server's name in the shard map. */
export interface ServerLog {
  readonly server: string;
  readonly events: readonly ServerEvent[];
}

export interface MergedLogs {
  /** Each stream once, in revision order: a run's from the server holding its shard. */
  readonly events: readonly LoggedEvent[];
  /** Run streams with a copy on a server that no longer holds their shard, every event of it also on the holder. */
  readonly copiesLeft: number;
  /** Events on a server that no longer holds their run's shard, and not on the one that does: lost by a move. */
  readonly strayed: readonly string[];
}

/**
 * The servers' logs as one. `holderOf` names the server the final shard map places a stream's run on
 * (undefined: not a run, or an id that names no slot): its copy is the run's history. A copy elsewhere
 * (a move's source) must hold nothing the holder lacks. Other streams (the control database's jobs,
 * teams) are on one server each; an event found twice is taken once.
 */
export function mergeServerLogs(
  logs: readonly ServerLog[],
  holderOf: (streamId: string) => string | undefined,
): MergedLogs {
  const byStream = new Map<string, Map<string, ServerEvent[]>>(); // stream -> server -> events
  for (const log of logs)
    for (const event of log.events) {
      let servers = byStream.get(event.streamId);
      if (servers === undefined) byStream.set(event.streamId, (servers = new Map()));
      const events = servers.get(log.server) ?? [];
      events.push(event);
      servers.set(log.server, events);
    }
  const events: LoggedEvent[] = [];
  const strayed: string[] = [];
  let copiesLeft = 0;
  for (const [streamId, servers] of byStream) {
    const holder = holderOf(streamId);
    const held = holder === undefined ? undefined : servers.get(holder);
    if (holder !== undefined) {
      const heldIds = new Set((held ?? []).map((e) => e.id));
      let copy = false;
      for (const [server, copied] of servers) {
        if (server === holder) continue;
        copy = true;
        for (const e of copied)
          if (!heldIds.has(e.id))
            strayed.push(`${streamId}@${e.revision} ${e.type}: on ${server}, not on ${holder}, which holds its shard`);
      }
      if (copy && held !== undefined) copiesLeft++;
    }
    // The holder's copy when it has one; else every copy found, each event once (by its id: a move's own
    // stream on two servers holds different events at one revision).
    const chosen = held ?? [...servers.values()].flat();
    const once = new Map<string, ServerEvent>();
    for (const e of chosen) if (!once.has(e.id)) once.set(e.id, e);
    events.push(...[...once.values()].sort((a, b) => (a.revision < b.revision ? -1 : a.revision > b.revision ? 1 : 0)));
  }
  return { events, copiesLeft, strayed };
}

/** A fault of the phase: done (with what it showed), or why not. */
export type FaultOutcome =
  { readonly done: true; readonly figure: string } | { readonly done: false; readonly why: string };

/** `chronicle shards move`'s outcome: moved, the command not in this build yet, or failed. */
export type MoveOutcome =
  | { readonly state: 'moved'; readonly figure: string }
  | { readonly state: 'not available' }
  | { readonly state: 'failed'; readonly why: string };

export interface ServerPhase {
  readonly merged: MergedLogs;
  /** The server without a standby stopped at once and started again. */
  readonly killed: FaultOutcome;
  /** The server with the standby killed and left down; the standby promoted by a scheduler node. */
  readonly promoted: FaultOutcome;
  readonly moved: MoveOutcome;
  /** The promoted server's shards: runs acknowledged to the producer, and each stream's last revision on it at its kill. */
  readonly promotedRuns: {
    readonly acknowledged: readonly string[];
    readonly committed: ReadonlyMap<string, bigint>;
  };
}

const EXAMPLES = 5;

export function serverPhaseChecks(phase: ServerPhase): Check[] {
  const { merged } = phase;
  return [
    {
      name: 'run events found only off their shard’s server (copies left)',
      value: `${merged.strayed.length} (${merged.copiesLeft})`,
      violated: merged.strayed.length > 0,
      examples: merged.strayed.slice(0, EXAMPLES),
    },
    faultCheck('fault: run server killed at once and started again', phase.killed),
    faultCheck('fault: standby promoted, the shard map pointing at it', phase.promoted),
    {
      name: 'fault: shard moved (chronicle shards move)',
      value:
        phase.moved.state === 'moved'
          ? phase.moved.figure
          : phase.moved.state === 'not available'
            ? 'not available'
            : `no (${phase.moved.why})`,
      violated: phase.moved.state === 'failed',
      examples: phase.moved.state === 'failed' ? [phase.moved.why] : [],
    },
    promotedRunsKept(merged.events, phase.promotedRuns),
  ];
}

function faultCheck(name: string, outcome: FaultOutcome): Check {
  return {
    name,
    value: outcome.done ? outcome.figure : `no (${outcome.why})`,
    violated: !outcome.done,
    examples: outcome.done ? [] : [outcome.why],
  };
}

/**
 * Nothing the promoted server acknowledged is lost: every run of its shards the producer was answered
 * for is in the log, and every stream it had committed to at its kill has as many events after the
 * promotion (revisions count from 0, and the merged log holds each once).
 */
function promotedRunsKept(events: readonly LoggedEvent[], runs: ServerPhase['promotedRuns']): Check {
  const lengths = new Map<string, number>();
  const scheduled = new Set<string>();
  for (const e of events) {
    lengths.set(e.streamId, (lengths.get(e.streamId) ?? 0) + 1);
    if (e.type === 'RunScheduled') scheduled.add(e.streamId);
  }
  const lost: string[] = [];
  for (const runId of runs.acknowledged)
    if (!scheduled.has(`run-${runId}`)) lost.push(`${runId}: acknowledged, not in the log`);
  for (const [streamId, revision] of runs.committed) {
    const length = lengths.get(streamId) ?? 0;
    if (BigInt(length) <= revision) lost.push(`${streamId}: revision ${revision} committed, ${length} events now`);
  }
  return {
    name: 'promotion: acknowledged runs / streams committed at the kill, none lost',
    value: `${runs.acknowledged.length} / ${runs.committed.size}, ${lost.length} lost`,
    violated: lost.length > 0,
    examples: lost.slice(0, EXAMPLES),
  };
}
