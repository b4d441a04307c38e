/**
 * The dashboard's one way to the server: POST /graphql on this origin with the signed-in token. A
 * GraphQL error keeps the API's `extensions.code` (`not-found`, `forbidden`, `unauthorized`, ...),
 * the REST problem type's last segment, so pages branch on the same codes as any client.
 */
export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number | undefined,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

interface GraphQLResponse<T> {
  readonly data?: T | null;
  readonly errors?: ReadonlyArray<{
    readonly message: string;
    readonly extensions?: { readonly code?: string; readonly status?: number };
  }>;
}

/** Called when the server refuses the token itself: the app signs out. */
let onUnauthorized: () => void = () => undefined;

export function whenUnauthorized(handler: () => void): void {
  onUnauthorized = handler;
}

export async function graphql<T>(
  token: string,
  query: string,
  variables: Record<string, unknown> = {},
  signal?: AbortSignal,
): Promise<T> {
  let response: Response;
  try {
    response = await fetch('/graphql', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query, variables: given(variables) }),
      signal: signal ?? null,
    });
  } catch (err) {
    if (signal?.aborted === true) throw err;
    throw new ApiError('network', 'the server did not answer', undefined);
  }
  const body = (await response.json().catch(() => ({}))) as GraphQLResponse<T>;
  const first = body.errors?.[0];
  if (first !== undefined) {
    const code = first.extensions?.code?.toLowerCase().replace(/_/g, '-') ?? 'error';
    const error = new ApiError(code, first.message, first.extensions?.status ?? response.status);
    if (isUnauthorized(error)) onUnauthorized();
    throw error;
  }
  if (response.status === 401) {
    onUnauthorized();
    throw new ApiError('unauthorized', 'the token was refused', 401);
  }
  if (!response.ok || body.data == null)
    throw new ApiError('error', `the server answered ${response.status}`, response.status);
  return body.data;
}

/** A filter not set is an argument not given: the API reads an explicit null as asked for. */
function given(variables: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(variables).filter(([, value]) => value !== null && value !== undefined));
}

/** Apollo says UNAUTHENTICATED; our API says unauthorized, with status 401. */
export function isUnauthorized(error: unknown): boolean {
  return (
    error instanceof ApiError &&
    (error.code === 'unauthorized' || error.code === 'unauthenticated' || error.status === 401)
  );
}

export function describeError(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  return error instanceof Error ? error.message : String(error);
}
