/** A start-up failure with a message that says what to fix; printed alone, without a stack. */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartupError';
  }
}

/** What to fix when `variable`'s database cannot be reached or prepared. */
export function describeConnectionError(err: unknown, databaseUrl: string, variable = 'DATABASE_URL'): string {
  const where = safeTarget(databaseUrl, variable);
  const code = (err as { code?: string } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  switch (code) {
    case 'ECONNREFUSED':
      return `cannot connect to PostgreSQL at ${where}: connection refused; is the server running? check ${variable}`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot connect to PostgreSQL at ${where}: host not found; check ${variable}`;
    case '28P01':
    case '28000':
      return `PostgreSQL at ${where} refused the credentials: ${message}; check ${variable}`;
    case '3D000':
      return `PostgreSQL at ${where}: ${message}; create the database or fix ${variable}`;
    default:
      return `cannot prepare the database at ${where}: ${message}`;
  }
}

/** host:port/database, never the password. */
function safeTarget(databaseUrl: string, variable: string): string {
  try {
    const url = new URL(databaseUrl);
    return `${url.hostname}:${url.port || '5432'}${url.pathname}`;
  } catch {
    return variable;
  }
}
