import { ProblemError, problemType } from '../../../libs/platform/src/http/problem-details.filter';

export const MAX_PAYLOAD_BYTES = 256 * 1024;

/** Reference FR-03: payloads up to 256 KB, else 413 payload-too-large. */
export function assertPayloadSize(payload: unknown): void {
  const bytes = payload === undefined ? 0 : Buffer.byteLength(JSON.stringify(payload));
  if (bytes > MAX_PAYLOAD_BYTES) {
    throw new ProblemError(413, problemType('payload-too-large'), 'payload too large', `the payload is ${bytes} bytes; at most ${MAX_PAYLOAD_BYTES} are allowed`);
  }
}
