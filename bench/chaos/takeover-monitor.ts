import type { Pool } from 'pg';

interface LeaseRow {
  readonly shard: number;
  readonly owner: string | null;
  /** Epoch milliseconds of the current owner's grant and of its last materialiser pass. */
  readonly grantedAt: number | null;
  readonly materialisedAt: number | null;
}

const POLL_MS = 200;

/** killed: its connections closed (its presence lost); stopped: SIGSTOPped, connected, silent. */
export type OwnerFault = 'killed' | 'stopped';

export interface Takeover {
  readonly fault: OwnerFault;
  readonly ms: number;
}

/**
 * Times shard takeovers from `shard_leases`: when a scheduler node is killed or stopped, each shard
 * it held is taken over once another node holds it and has made a materialiser pass for it since
 * the fault. Takeover time: the fault to that pass.
 */
export class TakeoverMonitor {
  private rows: readonly LeaseRow[] = [];
  /** shard -> the fault it waits to be taken over after. */
  private readonly pending = new Map<number, { pid: number; since: number; fault: OwnerFault }>();
  readonly takeovers: Takeover[] = [];
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> = Promise.resolve();

  constructor(private readonly pool: Pool) {}

  async start(): Promise<void> {
    await this.poll();
    this.timer = setInterval(() => (this.polling = this.poll()), POLL_MS);
  }

  /** The node of process `pid` was just killed or stopped: its shards, by the last poll, wait for a new owner. */
  ownerDown(pid: number, fault: OwnerFault): number {
    const since = Date.now();
    const held = this.rows.filter((row) => ownedBy(row.owner, pid));
    for (const row of held) this.pending.set(row.shard, { pid, since, fault });
    return held.length;
  }

  /** The shards the node of process `pid` held at the last poll. */
  heldBy(pid: number): number {
    return this.rows.filter((row) => ownedBy(row.owner, pid)).length;
  }

  /** Shards still waiting for a new owner's pass. */
  get missing(): number {
    return this.pending.size;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.polling;
    await this.poll();
  }

  private async poll(): Promise<void> {
    try {
      const { rows } = await this.pool.query<LeaseRow>(
        `SELECT shard, owner,
                (extract(epoch FROM granted_at) * 1000)::float8 AS "grantedAt",
                (extract(epoch FROM last_materialised_at) * 1000)::float8 AS "materialisedAt"
           FROM shard_leases ORDER BY shard`,
      );
      this.rows = rows;
    } catch {
      return; // PostgreSQL restarting: the next poll reads again
    }
    for (const row of this.rows) {
      const fault = this.pending.get(row.shard);
      if (fault === undefined || row.owner === null || ownedBy(row.owner, fault.pid)) continue;
      if (row.grantedAt === null || row.materialisedAt === null) continue;
      if (row.grantedAt < fault.since || row.materialisedAt < row.grantedAt) continue;
      this.takeovers.push({ fault: fault.fault, ms: row.materialisedAt - fault.since });
      this.pending.delete(row.shard);
    }
  }
}

/** Owners are `host:pid#nonce`. */
const ownedBy = (owner: string | null, pid: number): boolean => owner !== null && owner.includes(`:${pid}#`);
