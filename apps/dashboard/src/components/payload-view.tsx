import { prettyJson } from '../format';

/** At most this much of a payload is put on the page: a 256 KB payload would make it unusable. */
export const PAYLOAD_VIEW_LIMIT = 4096;

export function PayloadView({ value, label }: { value: unknown; label: string }) {
  const { text, bytes } = prettyJson(value);
  const capped = text.length > PAYLOAD_VIEW_LIMIT;
  return (
    <figure class="payload">
      <figcaption>
        {label} ({bytes.toLocaleString('en')} bytes
        {capped ? `, first ${PAYLOAD_VIEW_LIMIT.toLocaleString('en')} characters shown` : ''})
      </figcaption>
      <pre tabIndex={0} aria-label={label}>
        {capped ? `${text.slice(0, PAYLOAD_VIEW_LIMIT)}\n… (truncated)` : text}
      </pre>
    </figure>
  );
}
