import type { ExpectedRevision } from './event-store.port';

/** Stable codes: the API maps them to problem types, callers retry only on a conflict. */
export type EventStoreErrorCode =
  'wrong-expected-revision' | 'event-store-unavailable' | 'invalid-append' | 'unsupported';

export abstract class EventStoreError extends Error {
  abstract readonly code: EventStoreErrorCode;
}

/** Another writer got there first, or the stream is not in the expected state. */
export class WrongExpectedRevisionError extends EventStoreError {
  readonly code = 'wrong-expected-revision';
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedRevision,
    /** The stream's current revision, or 'no_stream'; undefined when the store did not say. */
    readonly actual: bigint | 'no_stream' | undefined,
  ) {
    super(
      `stream ${streamId}: expected ${String(expected)}, found ${actual === undefined ? 'another revision' : String(actual)}`,
    );
    this.name = 'WrongExpectedRevisionError';
  }
}

/** The store cannot be reached or refused to serve; the caller may try again later. */
export class EventStoreUnavailableError extends EventStoreError {
  readonly code = 'event-store-unavailable';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EventStoreUnavailableError';
  }
}

/** The append itself is malformed (empty batch, bad id, same stream twice). */
export class InvalidAppendError extends EventStoreError {
  readonly code = 'invalid-append';
  constructor(message: string) {
    super(message);
    this.name = 'InvalidAppendError';
  }
}

/** An operation this store has no use for (a log shared by every server has no streams to move). */
export class EventStoreUnsupportedError extends EventStoreError {
  readonly code = 'unsupported';
  constructor(message: string) {
    super(message);
    this.name = 'EventStoreUnsupportedError';
  }
}
