import { currentRequestContext } from '@chronicle/platform';

type Metadata = Readonly<Record<string, unknown>>;

/**
 * An event's metadata as recorded: the decision's (actor, schema version), and of the HTTP request that
 * caused it, when a request did (the scheduler's passes have none), its id as `correlationId` (the one
 * the request's log lines and its `X-Request-Id` answer carry) and its trace context as `traceparent`
 * and `tracestate` (docs/operations.md, "Traces"). A decision's own (a worker's attempt, named by its
 * completion) is kept.
 */
export function recordedMetadata(metadata: Metadata): Metadata {
  const request = currentRequestContext();
  if (request === undefined) return metadata;
  const { requestId, trace } = request;
  const withId = metadata['correlationId'] !== undefined ? metadata : { ...metadata, correlationId: requestId };
  return trace === undefined || withId['traceparent'] !== undefined ? withId : { ...withId, ...trace };
}
