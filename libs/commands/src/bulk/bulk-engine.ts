import {
  actsOnRuns,
  AdminEventType,
  BULK_BATCH,
  BULK_SAMPLE,
  BULK_STALE_SECONDS,
  checkBulkFilter,
  DomainError,
  actorOf,
  PLATFORM_STREAM,
  teamStreamId,
  type BulkAction,
  type BulkFilter,
  type ReaderCaller,
} from '@chronicle/domain';
import { EventStoreError, uuidV7 } from '@chronicle/event-store';
import { currentRequestContext, isUnavailable, type Clock } from '@chronicle/platform';
import type { RunServer, RunServers } from '../shards/run-servers';
import { recordAdminChange } from '../teams/admin-change';
import { requireTeamExists } from '../teams/require-team';
import type { ReadySignal } from '../workers/ready-signal';
import { actOnTargets } from './act-on-targets';
import {
  insertOperation,
  releaseOperation,
  saveProgress,
  touchOperation,
  type BulkCounts,
  type BulkOperationRow,
  type ServerCursor,
} from './bulk-operations.sql';
import {
  countSelected,
  dropTargets,
  nextTargets,
  sampleSelected,
  snapshotSelected,
  type BulkSampleItem,
  type BulkSelection,
} from './bulk-selection.sql';

/** What an operation has done so far, of what its selection held. */
export interface BulkProgress extends BulkCounts {
  readonly matched: number;
}

/** A dry run: how many the filter selects now, and the first of them. */
export interface BulkPreview {
  readonly matched: number;
  readonly sample: readonly BulkSampleItem[];
}

/**
 * Bulk operations, start to end (docs/api.md, "Bulk operations"), for every action: the DLQ's bulk
 * replay and discard (ActOnDeadLetters) and POST /v1/bulk-operations run through here alike.
 *
 * - **start**: the filter checked for the action, the team it acts on (a team token: its own; the admin:
 *   the filter's team, or every team), the selection taken on each server at one instant (the snapshot:
 *   bulk_operation_targets), then the operation's row and its one entry in the admin trail
 *   (BulkOperationStarted, with its filter and count) in one unit of work.
 * - **run**: server after server, batch after batch along each server's cursor (actOnTargets), the row
 *   saved after each batch by its holder (`owner`: this process), which stops after the batch when asked
 *   to (stopping) and is through when every server's cursor is.
 *
 * An operation resumed, or taken over from a process that died, goes on from its saved cursors. The
 * batch under way when a process died is looked at again: what it had done is skipped then (it no
 * longer matches), never done twice, and counted as skipped.
 */
export class BulkEngine {
  constructor(
    private readonly servers: RunServers,
    private readonly ready: ReadySignal,
    private readonly clock: Clock,
    /** This process, as the holder of the operations it runs (`host:pid#instance`). */
    readonly owner: string,
  ) {}

  /** How many the filter selects now, and the first BULK_SAMPLE of them (by id). */
  async preview(caller: ReaderCaller, action: BulkAction, filter: BulkFilter): Promise<BulkPreview> {
    const selection = await this.selection(caller, action, filter);
    const servers = this.serversOf(action);
    const [counts, samples] = await Promise.all([
      Promise.all(servers.map((s) => countSelected(s.pool, selection))),
      Promise.all(servers.map((s) => sampleSelected(s.pool, selection, BULK_SAMPLE))),
    ]);
    const sample = samples
      .flat()
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .slice(0, BULK_SAMPLE);
    return { matched: counts.reduce((sum, n) => sum + n, 0), sample };
  }

  /** The count alone (the DLQ's dry run). */
  async count(caller: ReaderCaller, action: BulkAction, filter: BulkFilter): Promise<number> {
    const selection = await this.selection(caller, action, filter);
    const counts = await Promise.all(this.serversOf(action).map((s) => countSelected(s.pool, selection)));
    return counts.reduce((sum, n) => sum + n, 0);
  }

  /** A new operation: its snapshot, its row (held by this process) and its entry in the admin trail. */
  async start(caller: ReaderCaller, action: BulkAction, filter: BulkFilter): Promise<BulkOperationRow> {
    const selection = await this.selection(caller, action, filter);
    const id = `bulk_${uuidV7().replace(/-/g, '')}`;
    const servers = this.serversOf(action);
    const cursors: Record<string, ServerCursor> = {};
    try {
      for (const server of servers) {
        const matched = await snapshotSelected(server.pool, id, selection);
        cursors[server.name] = { after: null, matched, done: matched === 0 };
      }
    } catch (err) {
      // No operation without its whole snapshot: the servers' parts taken so far go.
      await Promise.allSettled(servers.map((s) => dropTargets(s.pool, id)));
      throw err;
    }
    const matched = Object.values(cursors).reduce((sum, c) => sum + c.matched, 0);
    const actor = actorOf(caller);
    const control = this.servers.controlServer;
    let row: BulkOperationRow | undefined;
    await recordAdminChange(control.eventStore, control.pool, actor, {
      streamId: selection.team === null ? PLATFORM_STREAM : teamStreamId(selection.team),
      decide: () =>
        Promise.resolve({
          event: {
            type: AdminEventType.BulkOperationStarted,
            data: { operationId: id, action, team: selection.team, filter: selection.filter, matched },
          },
          answer: undefined,
        }),
      write: async (tx) => {
        row = await insertOperation(tx, {
          id,
          team: selection.team,
          actor,
          action,
          filter: selection.filter,
          snapshot_at: selection.at,
          cursors,
          matched,
          owner: this.owner,
          correlation_id: currentRequestContext()?.requestId ?? null,
        });
      },
    });
    return row!;
  }

  /**
   * An operation this process holds, run to its end, to a stop asked for, or until `signal` aborts (the
   * process stopping: it lets go after the batch, for another process to take up). `onProgress` is told
   * after each batch, and the next waits for it. A failure that asking again may cure (a server away) lets
   * the operation go for a later try; any other fails it. Answers the row as this process left it.
   */
  async run(
    operation: BulkOperationRow,
    onProgress: (progress: BulkProgress) => void | Promise<void> = () => undefined,
    signal?: AbortSignal,
  ): Promise<BulkOperationRow> {
    const control = this.servers.controlServer.pool;
    const release = async (
      status: 'running' | 'stopped' | 'done' | 'failed',
      error: string | null = null,
    ): Promise<BulkOperationRow> =>
      (await releaseOperation(control, operation.id, this.owner, status, error)) ?? operation;
    if (operation.status === 'stopping') return release('stopped');
    const cursors: Record<string, ServerCursor> = { ...operation.cursors };
    // Alive while it holds the operation, batch or no batch: a third of the time after which it is thought dead.
    const heartbeat = setInterval(
      () => void touchOperation(control, operation.id, this.owner).catch(() => undefined),
      (BULK_STALE_SECONDS * 1000) / 3,
    );
    let counts: BulkCounts = { processed: operation.processed, acted: operation.acted, skipped: operation.skipped };
    try {
      for (const [name, start] of Object.entries(operation.cursors)) {
        if (start.done) continue;
        const server = this.serverNamed(name);
        let after = start.after;
        for (;;) {
          if (signal?.aborted === true) return await release('running');
          const targets = await nextTargets(server.pool, operation.id, after, BULK_BATCH);
          const acted = targets.length === 0 ? 0 : await actOnTargets(server, operation, targets, this.clock.now());
          // Replayed runs wait again, a resumed job's runs may be leased: this process's long-polls are woken.
          if (acted > 0 && (operation.action === 'replay-dead' || operation.action === 'resume-jobs'))
            this.ready.notify();
          after = targets.at(-1) ?? after;
          cursors[name] = { ...start, after, done: targets.length < BULK_BATCH };
          counts = {
            processed: counts.processed + targets.length,
            acted: counts.acted + acted,
            skipped: counts.skipped + targets.length - acted,
          };
          const status = await saveProgress(control, operation.id, this.owner, cursors, counts);
          // Taken over meanwhile (this process was thought dead): the holder goes on from the saved cursor.
          if (status === undefined) return operation;
          if (targets.length > 0) await onProgress({ matched: operation.matched, ...counts });
          if (status === 'stopping') return await release('stopped');
          if (cursors[name]!.done) break;
        }
      }
      await Promise.all(Object.keys(cursors).map((name) => dropTargets(this.serverNamed(name).pool, operation.id)));
      return await release('done');
    } catch (err) {
      if (mayPassAgain(err)) await release('running').catch(() => undefined);
      else await release('failed', err instanceof Error ? err.message : String(err)).catch(() => undefined);
      throw err;
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** The selection a caller's filter makes for the action, now: refused when a field does not apply. */
  private async selection(caller: ReaderCaller, action: BulkAction, given: BulkFilter): Promise<BulkSelection> {
    const filter = checkBulkFilter(action, withoutUndefined(given));
    if (caller.kind === 'team' && filter.team !== undefined && filter.team !== caller.team)
      throw new DomainError('forbidden', "a team token acts on its own team's runs and jobs only", {
        field: 'filter.team',
      });
    const team = caller.kind === 'team' ? caller.team : (filter.team ?? null);
    if (caller.kind === 'admin' && team !== null) await requireTeamExists(this.servers.controlServer.pool, team);
    return { action, team, filter, at: this.clock.now() };
  }

  /** Where the action's targets are: runs on every server that keeps runs, jobs in the control database. */
  private serversOf(action: BulkAction): readonly RunServer[] {
    return actsOnRuns(action) ? this.servers.all : [this.servers.controlServer];
  }

  private serverNamed(name: string): RunServer {
    const server = this.servers.all.find((s) => s.name === name);
    if (server === undefined)
      throw new DomainError('shard-unavailable', `server ${name} is not in the shard map: its part waits`, {
        server: name,
        retryAfterSeconds: 1,
      });
    return server;
  }
}

/** A server or the log away: the operation waits for a later pass rather than failing. */
function mayPassAgain(err: unknown): boolean {
  return (
    isUnavailable(err) ||
    (err instanceof DomainError && (err.code === 'shard-unavailable' || err.code === 'conflict')) ||
    (err instanceof EventStoreError && err.code === 'event-store-unavailable')
  );
}

function withoutUndefined(filter: BulkFilter): BulkFilter {
  return Object.fromEntries(Object.entries(filter).filter(([, value]) => value !== undefined)) as BulkFilter;
}
