/**
 * The signed-in token, in sessionStorage: kept while the tab lives (reloads included), gone when it is
 * closed, never shared with other tabs or written to disk by us.
 */
const KEY = 'chronicle.token';

export function storedToken(): string | null {
  return sessionStorage.getItem(KEY);
}

export function storeToken(token: string): void {
  sessionStorage.setItem(KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(KEY);
}

/** What the token's prefix says it is (`sch_team_…`, `sch_admin_…`): shown beside the sign-out button. */
export function tokenKind(token: string): string {
  const match = /^sch_([a-z]+)_/.exec(token);
  return match?.[1] ?? 'token';
}
