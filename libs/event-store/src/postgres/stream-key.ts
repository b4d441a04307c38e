/** A run's stream as the domain names it: `run-` and a run id of today, `run_` and 32 lowercase hex digits. */
const RUN_STREAM = /^run-run_[0-9a-f]{32}$/;

/**
 * The bytes the log keeps a stream by (migrations/0049, the same as es_stream_key there): a run's stream
 * as a zero byte and the run id's 16 bytes, any other as its name's UTF-8 bytes, which never begin with
 * a zero byte. A name holding a NUL, which no stream of this log can have (PostgreSQL text holds none),
 * gets the empty key, which no stream has: a read finds nothing, an append is refused beforehand.
 * Made here, not in SQL: PostgreSQL's regular expressions cost microseconds a call.
 */
export function streamKey(streamId: string): Buffer {
  if (RUN_STREAM.test(streamId)) {
    const key = Buffer.alloc(17);
    key.write(streamId.slice(8), 1, 'hex');
    return key;
  }
  return streamId.includes('\0') ? Buffer.alloc(0) : Buffer.from(streamId, 'utf8');
}
