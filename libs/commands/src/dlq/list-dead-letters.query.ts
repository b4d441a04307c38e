import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { DomainError, type PresentRun, type TeamCaller } from '@chronicle/domain';
import { PG_POOL } from '@chronicle/platform';
import { listDeadRuns, type DlqCursor } from './dead-letters.sql';

export interface DeadLetterPage {
  readonly runs: readonly PresentRun[];
  /** Opaque; null on the last page. */
  readonly nextCursor: string | null;
}

/** GET /v1/dlq: the team's dead runs, newest first, a keyset page at a time. */
export class ListDeadLetters extends Query<DeadLetterPage> {
  constructor(
    readonly caller: TeamCaller,
    readonly job: string | undefined,
    readonly cursor: string | undefined,
    readonly limit: number,
  ) {
    super();
  }
}

@QueryHandler(ListDeadLetters)
export class ListDeadLettersHandler implements IQueryHandler<ListDeadLetters> {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  async execute({ caller, job, cursor, limit }: ListDeadLetters): Promise<DeadLetterPage> {
    const page = await listDeadRuns(
      this.pool,
      caller.team,
      job,
      cursor === undefined ? undefined : decodeCursor(cursor),
      limit + 1,
    );
    const runs = page.slice(0, limit);
    const last = runs[runs.length - 1];
    return {
      runs,
      nextCursor:
        page.length > limit && last?.death != null
          ? encodeCursor({ deadAt: last.death.deadAt, runId: last.definition.runId })
          : null,
    };
  }
}

function encodeCursor(cursor: DlqCursor): string {
  return Buffer.from(JSON.stringify([cursor.deadAt, cursor.runId])).toString('base64url');
}

function decodeCursor(value: string): DlqCursor {
  try {
    const [deadAt, runId] = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as [unknown, unknown];
    if (typeof deadAt === 'string' && !Number.isNaN(Date.parse(deadAt)) && typeof runId === 'string')
      return { deadAt, runId };
  } catch {
    // fall through to the refusal
  }
  throw new DomainError('validation-error', 'cursor is not one this API returned', { field: 'cursor' });
}
