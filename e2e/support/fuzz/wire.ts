import { request, type Agent } from 'node:http';
import { connect } from 'node:net';
import { deflateSync, gzipSync } from 'node:zlib';
import type { FuzzWorld } from './fuzz-world';
import type { RequestPlan } from './fuzz-requests';
import { percentEncoded } from './http-parts';
import { JsonEntries, WorldValue, writeJson, type JsonTree } from './json-tree';

/** A request as its bytes go out: the plan with the world's values and tokens put in. */
export interface WireRequest {
  readonly target: string;
  readonly method: string;
  readonly path: string;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body: Buffer | undefined;
  readonly raw: Buffer | undefined;
}

export interface WireAnswer {
  /** 0: no answer (the connection closed, or nothing came within the deadline). */
  readonly status: number;
  readonly contentType: string;
  /** The first MB of the body, as text. */
  readonly text: string;
  readonly error?: string;
}

const ANSWER_MS = 15_000;
const KEPT_BYTES = 1 << 20;

export function wireRequest(plan: RequestPlan, world: FuzzWorld): WireRequest {
  if (plan.raw !== undefined)
    return {
      target: plan.target,
      method: plan.method,
      path: '',
      headers: [],
      body: undefined,
      raw: Buffer.from(plan.raw, 'latin1'),
    };
  const put = (part: string | WorldValue): string =>
    part instanceof WorldValue ? percentEncoded(String(world.pick(part.pool, part.n))) : part;
  const query = plan.query.map(([key, value]) => `${key}=${put(value)}`).join('&');
  const headers: Array<readonly [string, string]> = [];
  const auth = plan.credentials;
  if ('caller' in auth) headers.push(['authorization', `${auth.scheme}${world.tokens[auth.caller]}`]);
  else if ('raw' in auth) headers.push(['authorization', auth.raw]);
  let body: Buffer | undefined;
  if (plan.body !== undefined) {
    const text = writeJson(plan.target === 'post /v1/lease' ? withoutLongPoll(plan.body) : plan.body, world.pick);
    body = spoil(Buffer.from(text, 'utf8'), plan, headers);
    if (plan.contentType !== undefined) headers.push(['content-type', plan.contentType]);
  }
  headers.push(...plan.headers);
  return {
    target: plan.target,
    method: plan.method,
    path: plan.path.map(put).join('') + (query === '' ? '' : `?${query}`),
    headers,
    body,
    raw: undefined,
  };
}

/** A long poll would hold the (sequential) run for up to 30 s: a lease waits for nothing. */
function withoutLongPoll(body: JsonTree): JsonTree {
  if (!(body instanceof JsonEntries)) return body;
  return new JsonEntries(
    body.entries.map(
      ([key, value]) => [key, key === 'waitSeconds' && typeof value === 'number' && value > 0 ? 0 : value] as const,
    ),
  );
}

function spoil(bytes: Buffer, plan: RequestPlan, headers: Array<readonly [string, string]>): Buffer {
  const spoiling = plan.spoiling;
  switch (spoiling.kind) {
    case 'none':
      return bytes;
    case 'truncate':
      return bytes.subarray(0, spoiling.at % Math.max(1, bytes.length));
    case 'insert': {
      // Inside a string where there is one (past the parser, to what reads the value), else anywhere.
      const quotes = [...bytes.keys()].filter((i) => bytes[i] === 0x22);
      const at = quotes.length > 0 ? quotes[spoiling.at % quotes.length]! + 1 : spoiling.at % (bytes.length + 1);
      return Buffer.concat([bytes.subarray(0, at), Buffer.from(spoiling.bytes), bytes.subarray(at)]);
    }
    case 'bom':
      return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]);
    case 'utf16le':
      return Buffer.from(bytes.toString('utf8'), 'utf16le');
    case 'gzip':
    case 'deflate':
      headers.push(['content-encoding', spoiling.kind]);
      return spoiling.kind === 'gzip' ? gzipSync(bytes) : deflateSync(bytes);
    case 'gzip-bomb':
      // The body, then 50 MB of spaces in a second gzip member: 50 KB on the wire.
      headers.push(['content-encoding', 'gzip']);
      return Buffer.concat([gzipSync(bytes), spaces()]);
    case 'concatenated':
      return Buffer.concat([bytes, bytes]);
    case 'padded':
      return Buffer.concat([Buffer.alloc(70_000, 0x20), bytes]);
    case 'empty':
      return Buffer.alloc(0);
    default: {
      const never: never = spoiling;
      return never;
    }
  }
}

let fiftyMegabytesOfSpaces: Buffer | undefined;
const spaces = (): Buffer => (fiftyMegabytesOfSpaces ??= gzipSync(Buffer.alloc(50 << 20, 0x20)));

/** Sends a request over a kept-alive connection (a raw one over a socket of its own) and reads the answer. */
export function sendRequest(baseUrl: string, agent: Agent, wire: WireRequest): Promise<WireAnswer> {
  const { hostname, port } = new URL(baseUrl);
  if (wire.raw !== undefined) return sendRaw(hostname, Number(port), wire.raw);
  if (!clientWouldSend(wire)) return sendRaw(hostname, Number(port), rawBytesOf(wire, `${hostname}:${port}`));
  // Given as a list the headers go out as they are (repeated ones too), with no Host or Content-Length added.
  const headers = headersSent(wire, `${hostname}:${port}`).flat();
  return new Promise((resolve) => {
    const done = (answer: WireAnswer): void => {
      clearTimeout(timer);
      resolve(answer);
    };
    const outgoing = request(
      { host: hostname, port, method: wire.method, path: wire.path, agent, headers },
      (response) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        response.on('data', (chunk: Buffer) => {
          if (kept < KEPT_BYTES) chunks.push(chunk);
          kept += chunk.length;
        });
        response.on('end', () =>
          done({
            status: response.statusCode ?? 0,
            contentType: response.headers['content-type'] ?? '',
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        response.on('error', (err) => done({ status: 0, contentType: '', text: '', error: err.message }));
      },
    );
    const timer = setTimeout(() => outgoing.destroy(new Error(`no answer within ${ANSWER_MS / 1000} s`)), ANSWER_MS);
    outgoing.on('error', (err) => done({ status: 0, contentType: '', text: '', error: err.message }));
    outgoing.end(wire.body);
  });
}

/** Node's client refuses control characters in a header or the path, and names that are not tokens. */
function clientWouldSend(wire: WireRequest): boolean {
  return (
    /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(wire.method) &&
    !/[^\x21-\xff]/.test(wire.path) &&
    wire.headers.every(
      ([name, value]) => /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name) && !/[^\t\x20-\x7e\x80-\xff]/.test(value),
    )
  );
}

/** The request as an HTTP/1.1 message, written by hand: what the client would not write goes out as is. */
function rawBytesOf(wire: WireRequest, host: string): Buffer {
  const headers = headersSent(wire, host);
  const head = `${wire.method} ${wire.path} HTTP/1.1\r\n${headers.map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), wire.body ?? Buffer.alloc(0)]);
}

function sendRaw(host: string, port: number, bytes: Buffer): Promise<WireAnswer> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const chunks: Buffer[] = [];
    const finish = (error?: string): void => {
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0);
      resolve({
        status,
        contentType: '',
        text: text.slice(0, 2000),
        ...(status === 0 ? { error: error ?? 'closed without an answer' } : {}),
      });
    };
    const timer = setTimeout(() => finish(`no answer within ${ANSWER_MS / 1000} s`), ANSWER_MS);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => finish());
    socket.on('error', (err) => finish(err.message));
    socket.write(bytes);
  });
}

/**
 * The headers a request goes out with: its own, and the Host and Content-Length that sendRequest adds
 * (with a connection of its own when written by hand, closed after the answer).
 */
function headersSent(wire: WireRequest, host: string): Array<readonly [string, string]> {
  const length: Array<readonly [string, string]> =
    wire.body === undefined ? [] : [['content-length', String(wire.body.length)]];
  return clientWouldSend(wire)
    ? [['host', host], ...length, ...wire.headers]
    : [['host', host], ...wire.headers, ['connection', 'close'], ...length];
}
/** The longest host a test's server has: loopback, a five-digit port. */
const LONGEST_HOST = '127.0.0.1:65535';

/**
 * The bytes of a request's line and headers as sent, which Node's HTTP parser counts against its limit
 * (the added headers included: a request just under the limit without them is over it with them).
 */
export function headBytes(wire: WireRequest): number {
  if (wire.raw !== undefined)
    return wire.raw.indexOf('\r\n\r\n') === -1 ? wire.raw.length : wire.raw.indexOf('\r\n\r\n');
  return (
    Buffer.byteLength(`${wire.method} ${wire.path} HTTP/1.1\r\n`, 'latin1') +
    headersSent(wire, LONGEST_HOST).reduce(
      (n, [name, value]) => n + Buffer.byteLength(`${name}: ${value}\r\n`, 'latin1'),
      0,
    )
  );
}

/** A request as a failure's report shows it: long parts cut, bytes that would not print escaped. */
export function describeRequest(wire: WireRequest): string {
  const cut = (text: string, max: number): string =>
    JSON.stringify(text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text);
  if (wire.raw !== undefined) return `raw ${cut(wire.raw.toString('latin1'), 300)}`;
  const headers = wire.headers.map(([name, value]) => `${name}: ${cut(value, 80)}`).join(', ');
  const body = wire.body === undefined ? 'no body' : `body ${cut(wire.body.toString('utf8'), 600)}`;
  return `${wire.method} ${cut(wire.path, 300)} [${headers}] ${body}`;
}
