/** Stable codes: the API maps each to a problem type; callers branch on them. */
export type DomainErrorCode = 'stale-lease' | 'invalid-transition' | 'not-ready' | 'not-found' | 'validation-error' | 'concurrency-limit';

export class DomainError extends Error {
  constructor(
    readonly code: DomainErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}
