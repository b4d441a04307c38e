import { DomainError } from './domain-error';

/** Payloads up to 256 KB (docs/api.md, "Request limits"). */
export const MAX_PAYLOAD_BYTES = 256 * 1024;

/** A payload over the limit is refused (413 payload-too-large), measured as the JSON the log stores. */
export function assertPayloadSize(payload: unknown): void {
  const bytes = payload === undefined ? 0 : utf8Length(JSON.stringify(payload));
  if (bytes > MAX_PAYLOAD_BYTES)
    throw new DomainError(
      'payload-too-large',
      `the payload is ${bytes} bytes; at most ${MAX_PAYLOAD_BYTES} are allowed`,
    );
}

/**
 * A payload whose JSON is larger than this is stored once, outside the run's event and its row, which
 * carry a reference to it (RunScheduledData.payloadRef; docs/api.md, "Payloads").
 */
export const INLINE_PAYLOAD_BYTES = 4 * 1024;

/** UTF-8 length without encoding (JSON.stringify leaves no lone surrogates). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code < 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}
