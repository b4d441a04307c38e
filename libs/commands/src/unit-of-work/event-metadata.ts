import { currentRequestContext } from '@chronicle/platform';

type Metadata = Readonly<Record<string, unknown>>;

/**
 * An event's metadata as recorded: the decision's (actor, schema version), and the id of the HTTP
 * request that caused it as `correlationId`, when a request did (the scheduler's passes have none).
 * The id is the one the request's log lines and its `X-Request-Id` answer carry.
 */
export function recordedMetadata(metadata: Metadata): Metadata {
  const requestId = currentRequestContext()?.requestId;
  return requestId === undefined || metadata['correlationId'] !== undefined
    ? metadata
    : { ...metadata, correlationId: requestId };
}
