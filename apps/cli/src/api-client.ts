import { CliError, EXIT } from './output';

/** Where the API commands go, and with which token: flags first, then CHRONICLE_URL and CHRONICLE_TOKEN. */
export interface ApiTarget {
  readonly url: string;
  readonly token: string;
}

export function apiTarget(flags: { url?: string; token?: string }, env: NodeJS.ProcessEnv = process.env): ApiTarget {
  const url = flags.url ?? env['CHRONICLE_URL'] ?? 'http://localhost:3000';
  const token = flags.token ?? env['CHRONICLE_TOKEN'];
  if (token === undefined || token === '')
    throw new CliError('set CHRONICLE_TOKEN (or --token) to a team or admin token', EXIT.usage);
  if (!/^https?:\/\//.test(url))
    throw new CliError(`CHRONICLE_URL must start with http:// or https://, not ${url}`, EXIT.usage);
  return { url: url.replace(/\/+$/, ''), token };
}

interface Problem {
  readonly type?: string;
  readonly title?: string;
  readonly detail?: string;
}

/**
 * One call of the API. A refusal (4xx) is a CliError with the problem's type and detail, exit 1; an
 * unreachable server or a 5xx, exit 3.
 */
export async function callApi(
  target: ApiTarget,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(`${target.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${target.token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
    throw new CliError(`cannot reach ${target.url}: ${cause}`, EXIT.unavailable);
  }
  if (response.ok) return response;
  const text = await response.text();
  let problem: Problem = {};
  try {
    problem = JSON.parse(text) as Problem;
  } catch {
    // not problem details: the status says it
  }
  const kind = problem.type?.replace(/^\/problems\//, '') ?? `HTTP ${response.status}`;
  throw new CliError(
    `${method} ${path}: ${kind}${problem.detail === undefined ? '' : `: ${problem.detail}`}`,
    response.status >= 500 ? EXIT.unavailable : EXIT.failed,
  );
}

export async function getJson<T>(target: ApiTarget, path: string): Promise<T> {
  return (await (await callApi(target, 'GET', path)).json()) as T;
}

export async function sendJson<T>(target: ApiTarget, method: string, path: string, body: unknown = {}): Promise<T> {
  return (await (await callApi(target, method, path, body)).json()) as T;
}

/** `?a=1&b=x` of the given values, leaving out undefined ones. */
export function queryOf(values: Record<string, string | number | undefined>): string {
  const given = Object.entries(values).filter((entry): entry is [string, string | number] => entry[1] !== undefined);
  return given.length === 0
    ? ''
    : `?${new URLSearchParams(given.map(([k, v]): [string, string] => [k, String(v)])).toString()}`;
}
