/** A lease's length when the worker does not say (`leaseSeconds` of lease and heartbeat). */
export const DEFAULT_LEASE_SECONDS = 30;

/** The worker id recorded on RunLeased when the worker gives none. */
export const DEFAULT_WORKER_ID = 'anonymous';
