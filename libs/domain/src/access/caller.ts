import { DomainError } from '../domain-error';

/** Who is calling, from the bearer token. */
export interface TeamCaller {
  readonly kind: 'team';
  readonly team: string;
  readonly queues: readonly string[];
  /** The token's id (never the token): events name it in their actor. */
  readonly tokenId?: string;
}
export interface WorkerCaller {
  readonly kind: 'worker';
  /** null: a platform worker, serving every team granted its queues. */
  readonly team: string | null;
  readonly queues: readonly string[];
  readonly tokenId?: string;
}
export interface AdminCaller {
  readonly kind: 'admin';
  readonly tokenId?: string;
}
export type Caller = AdminCaller | TeamCaller | WorkerCaller;

/** Who reads jobs and runs and lists them: a team (its own) or the admin (every team's). */
export type ReaderCaller = AdminCaller | TeamCaller;

const forbidden = (detail: string): DomainError => new DomainError('forbidden', detail);

export function requireAdmin(caller: Caller): void {
  if (caller.kind !== 'admin') throw forbidden('this call needs the admin token');
}

/** The admin, or the team's own token (not its workers'). */
export function requireAdminOrTeam(caller: Caller, team: string): void {
  if (caller.kind === 'admin' || (caller.kind === 'team' && caller.team === team)) return;
  throw forbidden("this call needs the admin token or the team's own");
}

export function requireTeam(caller: Caller): TeamCaller {
  if (caller.kind !== 'team') throw forbidden('this call needs a team token');
  return caller;
}

export function requireReader(caller: Caller): ReaderCaller {
  if (caller.kind === 'worker') throw forbidden('this call needs a team token or the admin token');
  return caller;
}

/**
 * The team a listing is kept to: a team's own (asking for another team's is refused), or for the admin
 * the team asked for, or every team (undefined).
 */
export function listedTeam(reader: ReaderCaller, asked: string | undefined): string | undefined {
  if (reader.kind === 'admin') return asked;
  if (asked !== undefined && asked !== reader.team) throw forbidden(`a team token lists its own team's only`);
  return reader.team;
}

export function requireWorker(caller: Caller): WorkerCaller {
  if (caller.kind !== 'worker') throw forbidden('this call needs a worker token');
  return caller;
}

export function requireQueue(caller: TeamCaller | WorkerCaller, queue: string): void {
  if (!caller.queues.includes(queue)) throw forbidden(`the token is not granted queue ${queue}`);
}

/**
 * A team's call about a job of its own: a worker's job on a queue its token was granted; an HTTP-target
 * job's queue is the dispatchers' alone, so it asks for no grant.
 */
export function requireJobQueue(caller: TeamCaller, job: { readonly queue: string; readonly target?: unknown }): void {
  if (job.target === undefined) requireQueue(caller, job.queue);
}

/** `worker:<team>:<worker id>` (`platform` for a platform worker's team), or without the id when none is known. */
export function workerActor(caller: WorkerCaller, workerId: string | undefined): string {
  const worker = `worker:${caller.team ?? 'platform'}`;
  return workerId === undefined ? worker : `${worker}:${workerId}`;
}

/**
 * Who an event says decided: `team:<team>:token:<token id>`, `admin:token:<token id>`, or
 * `worker:<team>` (a worker's runs name the worker itself, see workerActor).
 */
export function actorOf(caller: Caller): string {
  const who = caller.kind === 'admin' ? 'admin' : `${caller.kind}:${caller.team ?? 'platform'}`;
  return caller.kind === 'worker' || caller.tokenId === undefined ? who : `${who}:token:${caller.tokenId}`;
}
