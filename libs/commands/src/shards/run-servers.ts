import { Inject, Injectable } from '@nestjs/common';
import type { Pool } from 'pg';
import { DomainError } from '@chronicle/domain';
import {
  EventStoreError,
  type EventStore,
  type RunServerConnection,
  type RunServerDirectory,
} from '@chronicle/event-store';
import {
  type Config,
  CONFIG,
  EVENT_STORE,
  isUnavailable,
  type JsonLogger,
  SQLSTATE,
  sqlStateOf,
  LOGGER,
  PG_POOL,
  RUN_SERVER_DIRECTORY,
} from '@chronicle/platform';
import { RunDecisions } from '../unit-of-work/run-decisions';
import { RunLog } from '../unit-of-work/run-log';
import { RunReservations } from '../unit-of-work/run-reservations';
import type { UnavailableShards } from '../listings/page';
import { runSlot, shardOf } from './shard-of';

/** A server runs are kept on, with the one place its run events are appended (docs/sharding.md). */
export interface RunServer {
  /** Its name in the shard map; `control` without a map. */
  readonly name: string;
  readonly pool: Pool;
  /** Its log: its runs' streams are there. */
  readonly eventStore: EventStore;
  readonly decisions: RunDecisions;
  /** Whether it is the control database (definitions, teams, tokens, quotas' buckets, shard leases). */
  readonly isControl: boolean;
}

/**
 * Where each run is: on its job's shard's server, by the shard map of the control database. Without a
 * map there is one server, the control database, and every call here answers it. A run is found by its
 * id alone (its slot: runSlot); a run whose id names no slot was made before the map, in the control
 * database, which is among `all` (claims, passes and listings look there too) even when the map places
 * no shard on it.
 */
@Injectable()
export class RunServers {
  #all: readonly RunServer[] = [];
  #byShard: readonly RunServer[] = [];
  /** The control database as a server; named as the map names it when the map places shards there. */
  private control: RunServer;
  /** The servers by pool: a server the map still names keeps its RunDecisions (and its reservations). */
  #byPool = new Map<Pool, RunServer>();
  /** By server, the shards being copied to it (RunServerConnection.arriving). */
  #arriving = new Map<RunServer, readonly number[]>();
  private turn = 0;

  constructor(
    @Inject(RUN_SERVER_DIRECTORY) directory: RunServerDirectory,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(PG_POOL) private readonly controlPool: Pool,
    @Inject(EVENT_STORE) controlStore: EventStore,
    controlDecisions: RunDecisions,
    private readonly runLog: RunLog,
    @Inject(LOGGER) private readonly logger: JsonLogger,
  ) {
    this.control = movingShardRefusals({
      name: 'control',
      pool: controlPool,
      eventStore: controlStore,
      decisions: controlDecisions,
      isControl: true,
    });
    this.place(directory.current);
    // A failover or a move changed the map: from the next call on, runs are looked for where it says.
    directory.onChange((connections) => this.place(connections));
  }

  /** Every server that holds runs: the map's, and the control database (see the class). */
  get all(): readonly RunServer[] {
    return this.#all;
  }

  /** The control database as a server (definitions, teams, tokens; and the runs made before the map). */
  get controlServer(): RunServer {
    return this.control;
  }

  private place(connections: readonly RunServerConnection[]): void {
    const byPool = new Map<Pool, RunServer>();
    const arriving = new Map<RunServer, readonly number[]>();
    const servers = connections.map((c): RunServer => {
      const server =
        c.pool === this.controlPool
          ? (this.control = { ...this.control, name: c.name })
          : (this.#byPool.get(c.pool) ??
            unreachableAsShardUnavailable(
              {
                name: c.name,
                pool: c.pool,
                eventStore: c.eventStore,
                decisions: new RunDecisions(
                  c.eventStore,
                  c.pool,
                  new RunReservations(this.logger.child(`run-reservations@${c.name}`)),
                  this.runLog,
                ),
                isControl: false,
              },
              c.shards,
            ));
      byPool.set(c.pool, server);
      arriving.set(server, c.arriving);
      return server;
    });
    // The control database holds the runs made before the map even when no shard is placed there.
    const all = servers.some((s) => s.isControl) ? servers : [...servers, this.control];
    this.#byShard = Array.from({ length: this.config.shards }, (_, shard) => {
      const placed = connections.findIndex((c) => c.shards.includes(shard));
      return servers[placed] ?? this.control;
    });
    this.#all = all;
    this.#byPool = byPool;
    this.#arriving = arriving;
  }

  /**
   * The shards being copied to `server` by a move: its runs of them are copies until the map places
   * them there, which the scheduler's passes on it leave alone (the source's are the runs).
   */
  arrivingOn(server: RunServer): readonly number[] {
    return this.#arriving.get(server) ?? [];
  }

  /** The server of a job's runs. */
  ofJob(job: string): RunServer {
    return this.#byShard[shardOf(job, this.config.shards)]!;
  }

  /** The server a logical shard's runs are on (0 to SHARDS - 1). */
  ofShard(shard: number): RunServer {
    const server = this.#byShard[shard];
    if (server === undefined) throw new RangeError(`no shard ${shard} of ${this.config.shards}`);
    return server;
  }

  /** The server of a run, by the slot its id names; a run whose id names none is in the control database. */
  ofRun(runId: string): RunServer {
    const slot = runSlot(runId);
    return slot === undefined ? this.control : this.#byShard[slot % this.config.shards]!;
  }

  /** `items` grouped by the server each belongs on, in the servers' order. */
  split<T>(items: readonly T[], serverOf: (item: T) => RunServer): Array<[RunServer, T[]]> {
    const groups = new Map<RunServer, T[]>();
    for (const item of items) {
      const server = serverOf(item);
      let group = groups.get(server);
      if (group === undefined) groups.set(server, (group = []));
      group.push(item);
    }
    return [...groups];
  }

  /**
   * A page over every server: each answers its own first `limit` items after the same cursor, in one
   * order (by `keyOf`, newest first, as the listings are), and the first `limit` of them all are the
   * page. With one server, its answer as it is.
   */
  async merged<T>(
    page: (server: RunServer) => Promise<readonly T[]>,
    keyOf: (item: T) => readonly [string, string],
    limit: number,
  ): Promise<{ items: T[]; unavailable: UnavailableShards[] }> {
    if (this.#all.length === 1) return { items: [...(await page(this.#all[0]!))], unavailable: [] };
    const answers = await Promise.all(this.#all.map((server) => this.unlessUnavailable(() => page(server))));
    const keyed = answers.flatMap((a) => (a.ok ? a.value : [])).map((item) => ({ item, key: keyOf(item) }));
    keyed.sort((a, b) => newestFirst(a.key, b.key));
    // While a shard moves, its runs are on two servers: each once.
    const once = keyed.filter((k, i) => i === 0 || newestFirst(keyed[i - 1]!.key, k.key) !== 0);
    return {
      items: once.slice(0, limit).map(({ item }) => item),
      unavailable: answers.flatMap((a) => (a.ok ? [] : [a.unavailable])),
    };
  }

  /**
   * `work` on one server, with its server's refusal as a value when it cannot be reached (the other
   * servers' answers stand): what the listings, the claims and the counts over every server take.
   */
  async unlessUnavailable<R>(
    work: () => Promise<R>,
  ): Promise<{ ok: true; value: R } | { ok: false; unavailable: UnavailableShards; error: DomainError }> {
    try {
      return { ok: true, value: await work() };
    } catch (err) {
      const unavailable = shardUnavailable(err);
      if (unavailable === undefined) throw err;
      return { ok: false, unavailable, error: err as DomainError };
    }
  }

  /** `work` on every server at once, the answers of those that answer (counts go on without a server down). */
  async answering<R>(work: (server: RunServer) => Promise<R>): Promise<R[]> {
    const answers = await Promise.all(this.#all.map((server) => this.unlessUnavailable(() => work(server))));
    return answers.flatMap((a) => (a.ok ? [a.value] : []));
  }

  /** Every server, starting at the next one each call: claims draw from them in turn. */
  rotation(): RunServer[] {
    const start = this.turn++ % this.#all.length;
    return [...this.#all.slice(start), ...this.#all.slice(0, start)];
  }
}

/** Descending by (time, id), as the listings' keyset order (ISO times compare as strings). */
function newestFirst(a: readonly [string, string], b: readonly [string, string]): number {
  if (a[0] !== b[0]) return a[0] < b[0] ? 1 : -1;
  return a[1] === b[1] ? 0 : a[1] < b[1] ? 1 : -1;
}

/** The server and shards a shard-unavailable refusal names; undefined for any other error. */
export function shardUnavailable(err: unknown): UnavailableShards | undefined {
  if (!(err instanceof DomainError) || err.code !== 'shard-unavailable') return undefined;
  return { server: err.details.server ?? '', shards: err.details.shards ?? [] };
}

/**
 * A server other than the control database, whose failures to answer (its pool's, its log's, its units
 * of work's) become shard-unavailable refusals naming it and its shards: the API answers 503 for what
 * needs it, and the listings, claims and counts over every server go on without it. The control
 * database's failures stay what they are (nothing answers without it). Both refuse the writes of a
 * shard moving away meanwhile (movingShardRefusals).
 */
function unreachableAsShardUnavailable(server: RunServer, shards: readonly number[]): RunServer {
  const refusal = (err: unknown): unknown =>
    unreachable(err)
      ? new DomainError(
          'shard-unavailable',
          `server ${server.name} is not reachable: the runs of shards ${shards.join(', ')} wait until it is back`,
          { server: server.name, shards, retryAfterSeconds: 1 },
        )
      : movingShard(server, err);
  return {
    ...server,
    pool: refusing(server.pool, refusal),
    eventStore: refusing(server.eventStore, refusal),
    decisions: refusing(server.decisions, refusal),
  };
}

/**
 * A server (the control database too) whose units of work answer a write to a shard that is moving
 * away (SQLSTATE SH503, migrations/0034) with a shard-unavailable refusal: the claims over every
 * server pass it over, and the API answers 503 until the map names the shard's new server.
 */
function movingShardRefusals(server: RunServer): RunServer {
  return { ...server, decisions: refusing(server.decisions, (err) => movingShard(server, err)) };
}

function movingShard(server: RunServer, err: unknown): unknown {
  if (sqlStateOf(err) !== SQLSTATE.shardMoving) return err;
  const shard = (JSON.parse((err as { detail?: string }).detail ?? '{}') as { shard?: number }).shard;
  const shards = shard === undefined ? [] : [shard];
  return new DomainError(
    'shard-unavailable',
    `shard ${shards.join(', ')} is moving from server ${server.name} to another: its runs are back within seconds`,
    { server: server.name, shards, retryAfterSeconds: 1 },
  );
}

/** `target` with every promise its methods return rejected with `translate(err)` instead of `err`. */
function refusing<T extends object>(target: T, translate: (err: unknown) => unknown): T {
  return new Proxy(target, {
    get(object, property) {
      const value: unknown = Reflect.get(object, property, object);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]): unknown => {
        const result: unknown = (value as (...a: unknown[]) => unknown).apply(object, args);
        if (!(result instanceof Promise)) return result;
        return result.catch((err: unknown) => {
          throw translate(err);
        });
      };
    },
  });
}

function unreachable(err: unknown): boolean {
  return isUnavailable(err) || (err instanceof EventStoreError && err.code === 'event-store-unavailable');
}
