import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Pool } from 'pg';
import {
  ensureCanaryJobs,
  notifyRunsReady,
  RunMetrics,
  type RunServer,
  RunServers,
  PAYLOAD_STORE,
  type PayloadStore,
} from '@chronicle/commands';
import type { EventStore } from '@chronicle/event-store';
import {
  type JsonLogger,
  type Clock,
  type Config,
  CANARY_DEGRADED_AFTER,
  CLOCK,
  CONFIG,
  EVENT_STORE,
  LOGGER,
  METRICS_REGISTRY,
  PeriodicPass,
  type PeriodicPassOptions,
  PG_POOL,
} from '@chronicle/platform';
import type { Registry } from 'prom-client';
import { LeaseReaper } from './reaper/lease-reaper';
import { Materialiser } from './materialiser/materialiser';
import { OverlapResolver } from './overlap/overlap-resolver';
import { HotTablesVacuum } from './vacuum/hot-tables-vacuum';
import { payloadsReferenced, RunRetention } from './retention/run-retention';
import { CanaryChecker, CanaryMetrics } from './canary/canary-checker';
import { onEach } from './shards/on-each';
import { RunServerFailover } from './shards/run-server-failover';
import { ShardFencedError } from './shards/shard-fence';
import { ShardMetrics } from './shards/shard-metrics';
import { schedulerNodeName, ShardOwnership, type ShardScope } from './shards/shard-ownership';

/** An expired lease is returned to the queue within a second: the reaper looks four times a second. */
const REAP_INTERVAL_MS = 250;
/** The materialiser looks at every schedule each second, MATERIALISE_LOOKAHEAD_SECONDS (60) ahead. */
const MATERIALISE_INTERVAL_MS = 1000;
/** How often the hot tables' dead rows and the tables' statistics are looked at (HotTablesVacuum), beside the passes. */
const VACUUM_CHECK_INTERVAL_MS = 10_000;
/** How often retention looks for days to drop and partitions to create (RunRetention); also at start. */
const RETENTION_INTERVAL_MS = 10 * 60_000;
/** How often a node says it is alive, renews its shards and takes free ones: well within a lease. */
const OWNERSHIP_INTERVAL_MS = 1000;
/**
 * The longest wait of the ownership refresh and the scheduler's pass while they fail (a database
 * restarting): well within a shard's lease, so that a node back from a blip keeps its shards and
 * reaps at once.
 */
const FAILING_PASS_MAX_WAIT_MS = 2_000;
/** How often a node asks the run servers with a standby whether they answer (SHARD_FAILOVER_SECONDS). */
const FAILOVER_CHECK_INTERVAL_MS = 1000;
/** How often the owner of a shard looks at its canary's minutes (each minute is judged once). */
const CANARY_CHECK_INTERVAL_MS = 10_000;

@Injectable()
export class SchedulerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly passes: PeriodicPass[] = [];
  private ownership: ShardOwnership | undefined;

  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(LOGGER) private readonly logger: JsonLogger,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(CONFIG) private readonly config: Config,
    private readonly servers: RunServers,
    private readonly metrics: RunMetrics,
    @Inject(PAYLOAD_STORE) private readonly payloads: PayloadStore,
    @Inject(METRICS_REGISTRY) private readonly registry: Registry,
  ) {}

  /** This node's name, as the shards' owners show it. */
  readonly node = schedulerNodeName();

  async onApplicationBootstrap(): Promise<void> {
    const ownership = new ShardOwnership(this.pool, this.node, this.config.shards, this.config.shardLeaseSeconds, {
      presence: true,
    });
    this.ownership = ownership;
    await ownership.start();
    const shardMetrics = new ShardMetrics(this.registry);
    if (this.config.canaries) await ensureCanaryJobs(this.eventStore, this.pool, this.config.shards);
    // The passes over runs work on each run server; the jobs, shard leases and canary_status are in this.pool.
    const reaper = new LeaseReaper(this.servers, this.pool, this.metrics);
    const overlaps = new OverlapResolver(this.servers, this.pool);
    const materialiser = new Materialiser(
      this.servers,
      this.pool,
      this.clock,
      this.config.materialiseLookaheadSeconds,
      this.payloads,
    );
    const log = this.logger.child('scheduler');
    log.info('scheduler node started', { node: this.node, shards: this.config.shards });
    /** A run server's name in a line about it, when there are several. */
    const on = (server: RunServer): Record<string, string> =>
      this.servers.all.length > 1 ? { server: server.name } : {};
    /** A shard went to another node while this one paused: counted and said here; the next refresh shows it gone. */
    const fenced = (err: unknown, pass: string): boolean => {
      if (!(err instanceof ShardFencedError)) return false;
      shardMetrics.refused.inc({ pass });
      log.warn('write refused: shards held under a newer epoch', { pass, shards: err.shards });
      return true;
    };
    const refused = (err: unknown, pass: string): void => {
      if (!fenced(err, pass)) log.error('scheduler pass failed', { pass, err });
    };
    const pass = async (scope: ShardScope, materialise: boolean): Promise<void> => {
      if (scope.leases.length === 0) return;
      const [reaped, scheduled, overlapping] = await Promise.all([
        reaper.reapOnce(scope).catch((err: unknown) => (refused(err, 'reaper'), 0)),
        materialise
          ? materialiser.materialiseOnce(scope).catch((err: unknown) => (refused(err, 'materialiser'), 0))
          : 0,
        overlaps.resolveOnce(scope).catch((err: unknown) => (refused(err, 'overlap'), 0)),
      ]);
      if (reaped > 0) log.info('expired leases reaped', { runs: reaped });
      if (overlapping > 0) log.info('overlap policy applied', { runs: overlapping });
      if (scheduled > 0) log.info('scheduled runs materialised', { runs: scheduled });
      // Long-polls of every API process look at their next due time again.
      if (scheduled > 0 || reaped > 0) await notifyRunsReady(this.pool, `scheduler-${this.node}`);
      await ownership.passed(scope, materialise);
    };
    const every = (
      name: string,
      intervalMs: number,
      work: () => Promise<void>,
      options: Pick<PeriodicPassOptions, 'runAtStart' | 'handled' | 'maxBackoffMs'> = {},
    ): PeriodicPass => {
      const periodic = new PeriodicPass({ name, intervalMs, logger: log, registry: this.registry, ...options }, work);
      this.passes.push(periodic);
      periodic.start();
      return periodic;
    };

    const owning = every(
      'shard ownership',
      OWNERSHIP_INTERVAL_MS,
      async () => {
        const { granted, lost, released } = await ownership.refresh();
        if (lost.length > 0)
          log.warn('shards lost: granted to another node while this one did not renew', { shards: lost });
        if (released.length > 0) log.info('shards released for another node', { shards: released });
        shardMetrics.held.set(ownership.scope().leases.length);
        if (granted.length === 0) return;
        shardMetrics.granted.inc(granted.length);
        // A new owner reaps and materialises a shard before it serves it.
        const takeover = ownership.takeoverScope();
        await pass(takeover, true);
        ownership.serve(takeover);
        shardMetrics.held.set(ownership.scope().leases.length);
        log.info('shards taken', { shards: granted.map((l) => l.shard), epochs: granted.map((l) => l.epoch) });
      },
      { maxBackoffMs: FAILING_PASS_MAX_WAIT_MS },
    );
    // The first passes serve the shards the first refresh took.
    await owning.settled();

    let lastMaterialised = 0;
    every(
      'scheduler',
      REAP_INTERVAL_MS,
      async () => {
        const materialise = Date.now() - lastMaterialised >= MATERIALISE_INTERVAL_MS;
        if (materialise) lastMaterialised = Date.now();
        await pass(ownership.scope(), materialise);
      },
      { maxBackoffMs: FAILING_PASS_MAX_WAIT_MS },
    );

    if (this.config.canaries) {
      const canaries = new CanaryChecker(
        this.pool,
        this.servers,
        this.config.shards,
        this.clock,
        new CanaryMetrics(this.registry),
      );
      every(
        'canary',
        CANARY_CHECK_INTERVAL_MS,
        async () => {
          for (const v of await canaries.checkOnce(ownership.scope()))
            if (v.missed > 0 && v.consecutiveMissed >= CANARY_DEGRADED_AFTER)
              log.warn('canary missed', { shard: v.shard, consecutiveMissed: v.consecutiveMissed });
        },
        { runAtStart: false, handled: (err) => fenced(err, 'canary') },
      );
    }

    // The hot tables and the runs' partitions are each run server's: each has its backstop and its retention,
    // made for the servers the map names at each pass (a failover changes them).
    const vacuumOf = perServer(
      (server) =>
        new HotTablesVacuum(server.pool, {
          info: (message, fields) => log.info(message, { ...fields, ...on(server) }),
        }),
    );
    every(
      'hot tables vacuum',
      VACUUM_CHECK_INTERVAL_MS,
      async () => {
        await onEach(this.servers.all, async (server) => {
          const vacuum = vacuumOf(server);
          await vacuum.vacuumOnce();
          await vacuum.analyzeOnce();
        });
      },
      { runAtStart: false },
    );

    const retentionOf = perServer(
      (server) =>
        new RunRetention(
          server.pool,
          server.eventStore,
          this.config.retentionDays,
          () => this.clock.now(),
          // The payloads are the control database's; the other servers' runs refer to them too.
          server.isControl ? (sha256s) => this.payloadsReferencedElsewhere(sha256s) : null,
        ),
    );
    every('run retention', RETENTION_INTERVAL_MS, async () => {
      await onEach(this.servers.all, async (server) => {
        const report = await retentionOf(server).retainOnce();
        const changed =
          report !== undefined &&
          (report.droppedDays.length > 0 || report.createdDays.length > 0 || report.log.expiredStreams > 0);
        if (changed) log.info('run retention applied', { ...on(server), ...report });
      });
    });

    if (this.config.shardFailoverSeconds > 0) {
      const failover = new RunServerFailover(this.pool, this.config.shardFailoverSeconds, log);
      every('run server failover', FAILOVER_CHECK_INTERVAL_MS, async () => {
        for (const promotion of await failover.checkOnce())
          log.warn('run server failed over to its standby', { ...promotion });
      });
    }
  }

  /**
   * Of these payloads, those the runs of the servers other than the control database refer to; a
   * server that does not answer rejects the pass's deletes (its runs may refer to any of them).
   */
  private async payloadsReferencedElsewhere(sha256s: readonly string[]): Promise<ReadonlySet<string>> {
    const others = this.servers.all.filter((server) => !server.isControl);
    const found = await onEach(others, (server) => payloadsReferenced(server.pool, sha256s));
    return new Set(found.flatMap((set) => [...set]));
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.passes.map((periodic) => periodic.stop()));
    // The shards go back at once: the other nodes take them at their next refresh, not a lease later.
    await this.ownership?.stop().catch(() => undefined);
  }
}

/** One `make(server)` per server, kept while the server's pool is the same (a failover brings a new one). */
function perServer<T>(make: (server: RunServer) => T): (server: RunServer) => T {
  const made = new Map<RunServer['pool'], T>();
  return (server) => {
    let one = made.get(server.pool);
    if (one === undefined) made.set(server.pool, (one = make(server)));
    return one;
  };
}
