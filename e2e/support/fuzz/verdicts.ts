import { gunzipSync, inflateSync } from 'node:zlib';
import { graphqlRefusedAll } from './graphql-bodies';
import { headBytes, type WireAnswer, type WireRequest } from './wire';

/**
 * Node's HTTP parser refuses a request whose line and headers are over 16 KB (--max-http-header-size),
 * 431, or whose path has bytes outside printable ASCII, 400, and closes the connection at once: a
 * client still sending its body may see the reset before the answer. The parser's refusal, not a fault
 * (the run goes on only if the process still answers /healthz).
 */
const MAX_HEAD_BYTES = 16 * 1024;
const parserRefuses = (request: WireRequest): boolean =>
  headBytes(request) > MAX_HEAD_BYTES || /[^\x21-\x7e]/.test(request.path);

/*
 * What an answer says about the server: a failure (no answer, a 5xx, a 5xx hidden in a 200: a GraphQL
 * error of status 500, a streamed answer's last line a 5xx problem), whether the request was refused
 * (so it must have appended nothing), and whether it got past authentication and body parsing to the
 * operation's handler.
 */

/** Why an answer shows a server fault; undefined when it does not. */
export function faultOf(request: WireRequest, answer: WireAnswer): string | undefined {
  if (answer.status === 0 && /ECONNRESET|EPIPE/.test(answer.error ?? '') && parserRefuses(request)) return undefined;
  if (answer.status === 0) return `no answer: ${answer.error ?? 'none'}`;
  if (answer.status >= 500) return `status ${answer.status}: ${answer.text.slice(0, 300)}`;
  if (request.target === 'post /graphql') {
    const errors = (parsed(answer) as { errors?: Array<{ message?: string; extensions?: Record<string, unknown> }> })
      ?.errors;
    const internal = errors?.find(
      (e) => Number(e.extensions?.['status'] ?? 0) >= 500 || /internal/i.test(String(e.extensions?.['code'] ?? '')),
    );
    if (internal !== undefined) return `GraphQL error ${JSON.stringify(internal).slice(0, 300)} in a ${answer.status}`;
  }
  if (answer.contentType.includes('ndjson')) {
    const last = answer.text.trim().split('\n').at(-1) ?? '';
    const problem = (safeParse(last) as { problem?: { status?: number } } | undefined)?.problem;
    if (problem !== undefined && Number(problem.status ?? 0) >= 500) return `streamed problem ${last.slice(0, 300)}`;
  }
  return undefined;
}

/** A refused request: an error status, or GraphQL's refusal of all it asked for (which comes as a 200). */
export function wasRefused(request: WireRequest, answer: WireAnswer): boolean {
  if (answer.status >= 400 || answer.status === 0) return true;
  return request.target === 'post /graphql' && graphqlRefusedAll(bodyAsServerReadsIt(request), parsed(answer));
}

/**
 * The body's text as the server's parser reads it: inflated by its content-encoding (gzip, deflate) and
 * without a byte order mark. Counting the operations a GraphQL request ran needs the text the server ran.
 */
function bodyAsServerReadsIt(request: WireRequest): string {
  const encoding = request.headers.find(([name]) => name.toLowerCase() === 'content-encoding')?.[1].toLowerCase();
  let bytes = request.body ?? Buffer.alloc(0);
  try {
    if (encoding === 'gzip') bytes = gunzipSync(bytes, { maxOutputLength: 1024 * 1024 });
    else if (encoding === 'deflate') bytes = inflateSync(bytes, { maxOutputLength: 1024 * 1024 });
  } catch {
    return ''; // the server cannot read it either: nothing ran
  }
  return decodeAs(charsetOf(request), bytes).replace(/^\uFEFF/, '');
}

/** The charset the request's content-type names (lower case), utf-8 when it names none. */
function charsetOf(request: WireRequest): string {
  const type = request.headers.find(([name]) => name.toLowerCase() === 'content-type')?.[1] ?? '';
  return /;\s*charset="?([^";\s]+)/i.exec(type)?.[1]?.toLowerCase() ?? 'utf-8';
}

/** Bytes decoded as the server's JSON body parser decodes them (it takes the utf- charsets, by iconv-lite). */
function decodeAs(charset: string, bytes: Buffer): string {
  if (charset === 'utf-16be') return Buffer.from(bytes).swap16().toString('utf16le');
  if (charset === 'utf-16' || charset === 'utf-16le' || charset === 'ucs-2') return bytes.toString('utf16le');
  return bytes.toString('utf8');
}

/** Refusals made before any handler ran: the router's, the body parser's, the authentication's. */
const BEFORE_HANDLER =
  /^(Cannot [A-Z]+ |Failed to decode param|request body is not valid JSON|the request body |request aborted|unsupported charset|unsupported content encoding|request size did not match)/;

/** Whether the request got to its operation's handler (and the answer is the handler's own). */
export function reachedHandler(answer: WireAnswer): boolean {
  if (answer.status >= 200 && answer.status < 400) return true;
  if (![400, 404, 409].includes(answer.status)) return false;
  const detail = (parsed(answer) as { detail?: unknown } | undefined)?.detail;
  return typeof detail === 'string' && !BEFORE_HANDLER.test(detail);
}

export function parsed(answer: WireAnswer): unknown {
  return /json/.test(answer.contentType) ? safeParse(answer.text) : undefined;
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Per target: requests sent, how many reached the handler, how many were answered 2xx, and the time taken. */
export class Coverage {
  private readonly byTarget = new Map<string, { sent: number; reached: number; ok: number; ms: number }>();

  record(target: string, answer: WireAnswer, ms: number): void {
    const tally = this.byTarget.get(target) ?? { sent: 0, reached: 0, ok: 0, ms: 0 };
    tally.sent += 1;
    tally.ms += ms;
    if (reachedHandler(answer)) tally.reached += 1;
    if (answer.status >= 200 && answer.status < 300) tally.ok += 1;
    this.byTarget.set(target, tally);
  }

  /** The targets no request reached the handler of. */
  unreached(targets: readonly string[]): string[] {
    return targets.filter((t) => (this.byTarget.get(t)?.reached ?? 0) === 0);
  }

  table(): string {
    return [...this.byTarget.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(
        ([target, t]) =>
          `  ${target.padEnd(38)} ${String(t.sent).padStart(5)} sent ${String(t.reached).padStart(5)} reached ` +
          `${String(t.ok).padStart(5)} 2xx ${(t.ms / 1000).toFixed(1).padStart(6)} s`,
      )
      .join('\n');
  }
}
