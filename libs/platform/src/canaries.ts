/**
 * A shard whose canary missed this many minutes in a row (docs/operations.md, "Canaries"): the
 * scheduler warns, the alert fires (chronicle_canary_consecutive_missed) and every process's /healthz
 * says degraded.
 */
export const CANARY_DEGRADED_AFTER = 2;
