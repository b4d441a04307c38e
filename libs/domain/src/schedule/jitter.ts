/**
 * Jitter (docs/api.md, "Schedules"): a job's runs are offset by
 * hash(job name) mod jitterSeconds, so each job keeps a stable time while the
 * fleet spreads over the window.
 * FNV-1a (32 bit): stable across processes and versions, evenly spread.
 */
export function jitterOffsetSeconds(jobName: string, jitterSeconds: number): number {
  if (jitterSeconds <= 0) return 0;
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(jobName)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % jitterSeconds;
}
