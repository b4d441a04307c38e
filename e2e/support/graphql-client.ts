/** One GraphQL answer as a client reads it: the HTTP status, the data and the errors. */
export interface GraphqlAnswer<T> {
  readonly status: number;
  readonly data: T | null | undefined;
  readonly errors: readonly GraphqlError[] | undefined;
}

export interface GraphqlError {
  readonly message: string;
  readonly path?: readonly (string | number)[];
  readonly extensions: { readonly code: string; readonly status: number } & Readonly<Record<string, unknown>>;
}

/** POST /graphql with the token, as any GraphQL client sends it. */
export function graphqlClient(baseUrl: string, token?: string) {
  return async <T = Record<string, unknown>>(
    query: string,
    variables?: Record<string, unknown>,
  ): Promise<GraphqlAnswer<T>> => {
    const response = await fetch(`${baseUrl}/graphql`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await response.json()) as { data?: T | null; errors?: GraphqlError[] };
    return { status: response.status, data: body.data, errors: body.errors };
  };
}

export type GraphqlClient = ReturnType<typeof graphqlClient>;
