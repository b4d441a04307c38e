import { DomainError } from '../domain-error';

/** Who is calling, from the bearer token. */
export interface TeamCaller {
  readonly kind: 'team';
  readonly team: string;
  readonly queues: readonly string[];
}
export interface WorkerCaller {
  readonly kind: 'worker';
  /** null: a platform worker, serving every team granted its queues. */
  readonly team: string | null;
  readonly queues: readonly string[];
}
export type Caller = { readonly kind: 'admin' } | TeamCaller | WorkerCaller;

const forbidden = (detail: string): DomainError => new DomainError('forbidden', detail);

export function requireAdmin(caller: Caller): void {
  if (caller.kind !== 'admin') throw forbidden('this call needs the admin token');
}

export function requireTeam(caller: Caller): TeamCaller {
  if (caller.kind !== 'team') throw forbidden('this call needs a team token');
  return caller;
}

export function requireWorker(caller: Caller): WorkerCaller {
  if (caller.kind !== 'worker') throw forbidden('this call needs a worker token');
  return caller;
}

export function requireQueue(caller: TeamCaller | WorkerCaller, queue: string): void {
  if (!caller.queues.includes(queue)) throw forbidden(`the token is not granted queue ${queue}`);
}

/** The actor an event records for a caller's decision. */
export function actorOf(caller: Caller): string {
  return caller.kind === 'admin' ? 'admin' : `${caller.kind}:${caller.team ?? 'platform'}`;
}
