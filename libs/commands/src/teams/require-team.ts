import { DomainError } from '@chronicle/domain';
import type { Queryable } from '@chronicle/platform';
import { teamExists } from './tokens.sql';

export async function requireTeamExists(db: Queryable, team: string): Promise<void> {
  if (!(await teamExists(db, team))) throw new DomainError('not-found', `team ${team.slice(0, 80)} does not exist`);
}
