/** A lease's length when the worker does not say (`leaseSeconds` of lease and heartbeat). */
export const DEFAULT_LEASE_SECONDS = 30;

/** The worker id recorded on RunLeased when the worker gives none. */
export const DEFAULT_WORKER_ID = 'anonymous';

/**
 * How far ahead of a run's due time a worker may lease it (`prefetchMs` of lease): the lease names the
 * due time as its `notBefore`, and the worker starts the run then. Opt-in; 0 (the default) leases ready
 * runs only.
 */
export const MAX_PREFETCH_MS = 2000;
