import { collectDefaultMetrics, Registry } from 'prom-client';

/**
 * A process's own Prometheus registry, with Node's default process metrics on it. Never prom-client's
 * global one: tests start several apps in one process, and each app's GET /metrics shows its own.
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}
