import { Inject, Injectable } from '@nestjs/common';
import type { Pool } from 'pg';
import type { WorkerCaller } from '@chronicle/domain';
import { PG_POOL } from '@chronicle/platform';
import { countTeamsServed } from './claim-ready-runs.sql';

/** How long a platform worker's count of teams is kept: grants change rarely. */
const KEEP_MS = 5_000;

/**
 * How many teams a claim serves, for the share of the batch it reads per
 * team: a team's worker serves its team; a platform worker the teams
 * granted its queues (counted, and kept a few seconds).
 */
@Injectable()
export class TeamsServed {
  private readonly known = new Map<string, { teams: number; until: number }>();

  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  async of(caller: WorkerCaller, queues: readonly string[]): Promise<number> {
    if (caller.team !== null) return 1;
    const key = [...queues].sort().join('\u0000');
    const known = this.known.get(key);
    if (known !== undefined && known.until > Date.now()) return known.teams;
    const teams = await countTeamsServed(this.pool, queues);
    if (this.known.size >= 1000) this.known.clear();
    this.known.set(key, { teams, until: Date.now() + KEEP_MS });
    return teams;
  }
}
