import type { Pool } from 'pg';
import {
  answers,
  ConfigError,
  failoverCandidates,
  type JsonLogger,
  promoteStandby,
  type Promotion,
} from '@chronicle/platform';

/**
 * Failover without an operator (SHARD_FAILOVER_SECONDS, docs/sharding.md): every pass asks each server
 * of the shard map that has a standby (RUN_SHARD_STANDBY_URLS) whether it answers; one that has not
 * answered for the grace has its standby promoted and its shards placed there, as `chronicle shards
 * promote` does. Every scheduler node looks; when two promote at once, the second finds the shards
 * moved already and leaves it.
 */
export class RunServerFailover {
  /** Since when each server has not answered, in ms; absent: it answered at the last look. */
  private readonly silentSince = new Map<string, number>();

  constructor(
    private readonly control: Pool,
    private readonly graceSeconds: number,
    private readonly logger: JsonLogger,
    private readonly now: () => number = Date.now,
  ) {}

  /** One look at every server with a standby; resolves with the promotions it made. */
  async checkOnce(): Promise<Promotion[]> {
    const promoted: Promotion[] = [];
    for (const server of await failoverCandidates(this.control)) {
      if (await answers(server.url)) {
        this.silentSince.delete(server.name);
        continue;
      }
      const since = this.silentSince.get(server.name) ?? this.now();
      this.silentSince.set(server.name, since);
      if (this.now() - since < this.graceSeconds * 1000) continue;
      this.logger.warn('run server silent past the grace: promoting its standby', {
        server: server.name,
        silentSeconds: Math.round((this.now() - since) / 1000),
      });
      try {
        promoted.push(await promoteStandby(this.control, server.name, server.standbyUrl));
        this.silentSince.delete(server.name);
      } catch (err) {
        // Another node promoted it first: the map no longer places a shard on it.
        if (!(err instanceof ConfigError)) throw err;
      }
    }
    return promoted;
  }
}
