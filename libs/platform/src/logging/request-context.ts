import { AsyncLocalStorage } from 'node:async_hooks';

/** What every line logged while an HTTP request is handled carries. */
export interface RequestContext {
  readonly requestId: string;
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
