import { AsyncLocalStorage } from 'node:async_hooks';
import type { TraceContext } from '@chronicle/domain';

/** What every line logged while an HTTP request is handled carries, and every event it causes records. */
export interface RequestContext {
  readonly requestId: string;
  /**
   * The trace the request belongs to, as its events record it (docs/operations.md, "Traces"): its server
   * span's context when this process traces, else the caller's `traceparent` and `tracestate`; none
   * without either.
   */
  readonly trace?: TraceContext;
}

/**
 * The request being handled, if any: set once by the HTTP middleware around
 * the rest of the request's chain, so a line logged deep in a command
 * handler carries the request's id without it being passed down.
 */
const storage = new AsyncLocalStorage<RequestContext>();

export function runInRequestContext<T>(context: RequestContext, work: () => T): T {
  return storage.run(context, work);
}

export function currentRequestContext(): RequestContext | undefined {
  return storage.getStore();
}
