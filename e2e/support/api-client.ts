/** A minimal HTTP client for the tests: what a user's curl would do. */
export interface ApiResponse<T = Record<string, unknown>> {
  readonly status: number;
  readonly body: T;
  readonly contentType: string | null;
  readonly headers: Headers;
}

export function apiClient(baseUrl: string, token?: string) {
  async function call<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiResponse<T>> {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    return {
      status: response.status,
      body: (text === '' ? {} : JSON.parse(text)) as T,
      contentType: response.headers.get('content-type'),
      headers: response.headers,
    };
  }
  return {
    get: <T = Record<string, unknown>>(path: string) => call<T>('GET', path),
    post: <T = Record<string, unknown>>(path: string, body?: unknown, headers?: Record<string, string>) =>
      call<T>('POST', path, body ?? {}, headers),
    put: <T = Record<string, unknown>>(path: string, body: unknown) => call<T>('PUT', path, body),
    raw: call,
  };
}

export type ApiClient = ReturnType<typeof apiClient>;
