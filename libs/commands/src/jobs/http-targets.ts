import { randomBytes } from 'node:crypto';
import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import {
  actorOf,
  AdminEventType,
  DomainError,
  HTTP_TARGET_QUEUE,
  type HttpTarget,
  teamStreamId,
  type TeamCaller,
} from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import { type Clock, CLOCK, EVENT_STORE, PG_POOL, type Queryable, withTransaction } from '@chronicle/platform';
import { recordAdminChange } from '../teams/admin-change';
import { loadOwnJob } from './job-stream';

/*
 * HTTP-target jobs' signing secrets (docs/api.md, "HTTP-target jobs"), in job_signing_secrets: the
 * current one signs every call; a rotated one signs too until it retires, so two are valid meanwhile.
 */

/** 32 random bytes, named so that a secret found in a log or a repository says what it is. */
function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/**
 * A job that names a target: its team's grant of the dispatchers' queue (they lease as a platform
 * worker, serving every team granted it), and its secret if it has none yet, which the answer shows once.
 */
export async function prepareTarget(pool: Pool, team: string, job: string): Promise<string | undefined> {
  return withTransaction(pool, async (tx) => {
    await tx.query('INSERT INTO queue_grants (queue, team) VALUES ($1, $2) ON CONFLICT DO NOTHING', [
      HTTP_TARGET_QUEUE,
      team,
    ]);
    const { rows } = await tx.query<{ secret: string }>(
      `INSERT INTO job_signing_secrets (job, secret) VALUES ($1, $2)
         ON CONFLICT (job) WHERE retires_at IS NULL DO NOTHING RETURNING secret`,
      [job, newSecret()],
    );
    return rows[0]?.secret;
  });
}

/** What a dispatcher needs to call a job's target: where, how long it may take, and the secrets to sign with. */
export interface TargetToCall extends HttpTarget {
  /** The job's own timeout (a lease never outlasts it), which bounds the call's too. */
  readonly jobTimeoutSeconds: number;
  /** Its valid secrets, the current first: the call carries a signature by each. */
  readonly secrets: readonly string[];
}

/** The jobs' targets, as their definitions now say; a job without one (no longer an HTTP target) is absent. */
export async function targetsOf(db: Queryable, jobs: readonly string[]): Promise<Map<string, TargetToCall>> {
  const { rows } = await db.query<{ name: string; target: HttpTarget; timeout_seconds: number; secrets: string[] }>(
    `SELECT j.name, j.definition->'target' AS target, (j.definition->>'timeoutSeconds')::int AS timeout_seconds,
            coalesce((SELECT array_agg(s.secret ORDER BY s.retires_at IS NOT NULL, s.created_at DESC)
                        FROM job_signing_secrets s
                       WHERE s.job = j.name AND (s.retires_at IS NULL OR s.retires_at > now())), '{}') AS secrets
       FROM jobs j
      WHERE j.name = ANY($1::text[]) AND j.definition ? 'target'`,
    [jobs],
  );
  return new Map(rows.map((r) => [r.name, { ...r.target, jobTimeoutSeconds: r.timeout_seconds, secrets: r.secrets }]));
}

/** The most a rotated secret may stay valid: a week. */
export const MAX_PREVIOUS_VALID_SECONDS = 7 * 86_400;

export interface RotatedSecret {
  readonly secret: string;
  /** Until when the secret it replaced still signs the calls. */
  readonly previousValidUntil: string;
}

/**
 * POST /v1/jobs/{name}/signing-secret:rotate: a new current secret, the old one valid `previousValidSeconds`
 * more (0: retired now), older ones retired at once. Recorded in the team's admin trail
 * (SigningSecretRotated), without the secrets.
 */
export class RotateSigningSecret extends Command<RotatedSecret> {
  constructor(
    readonly caller: TeamCaller,
    readonly job: string,
    readonly previousValidSeconds: number,
  ) {
    super();
  }
}

@CommandHandler(RotateSigningSecret)
export class RotateSigningSecretHandler implements ICommandHandler<RotateSigningSecret> {
  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute({ caller, job, previousValidSeconds }: RotateSigningSecret): Promise<RotatedSecret> {
    const defined = await loadOwnJob(this.eventStore, caller, job);
    if (defined.definition.target === undefined)
      throw new DomainError('validation-error', `job ${job} has no target, so no signing secret`, { field: 'name' });
    const secret = newSecret();
    const previousValidUntil = new Date(this.clock.now().getTime() + previousValidSeconds * 1000).toISOString();
    return recordAdminChange(this.eventStore, this.pool, actorOf(caller), {
      streamId: teamStreamId(caller.team),
      decide: () =>
        Promise.resolve({
          event: { type: AdminEventType.SigningSecretRotated, data: { job, previousValidUntil } },
          answer: { secret, previousValidUntil },
        }),
      write: async (tx) => {
        await tx.query('DELETE FROM job_signing_secrets WHERE job = $1 AND retires_at IS NOT NULL', [job]);
        await tx.query('UPDATE job_signing_secrets SET retires_at = $2 WHERE job = $1 AND retires_at IS NULL', [
          job,
          previousValidUntil,
        ]);
        await tx.query('INSERT INTO job_signing_secrets (job, secret) VALUES ($1, $2)', [job, secret]);
      },
    });
  }
}
