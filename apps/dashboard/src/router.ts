import { useEffect, useState } from 'preact/hooks';

/** Every page lives under /dashboard/; the server answers each such path with the app (index.html). */
export const BASE = '/dashboard';

export type Route =
  | { readonly page: 'overview' }
  | { readonly page: 'jobs' }
  | { readonly page: 'job'; readonly name: string }
  | { readonly page: 'run'; readonly id: string }
  | { readonly page: 'dead-letters' }
  | { readonly page: 'bulk' }
  | { readonly page: 'not-found' };

export function routeOf(pathname: string): Route {
  const rest = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname;
  const parts = rest
    .split('/')
    .filter((p) => p !== '')
    .map(decodeURIComponent);
  if (parts.length === 0) return { page: 'overview' };
  if (parts[0] === 'jobs' && parts.length === 1) return { page: 'jobs' };
  if (parts[0] === 'jobs' && parts.length === 2) return { page: 'job', name: parts[1]! };
  if (parts[0] === 'runs' && parts.length === 2) return { page: 'run', id: parts[1]! };
  if (parts[0] === 'dead-letters' && parts.length === 1) return { page: 'dead-letters' };
  if (parts[0] === 'bulk' && parts.length === 1) return { page: 'bulk' };
  return { page: 'not-found' };
}

export const paths = {
  overview: () => `${BASE}/`,
  jobs: () => `${BASE}/jobs`,
  job: (name: string) => `${BASE}/jobs/${encodeURIComponent(name)}`,
  run: (id: string) => `${BASE}/runs/${encodeURIComponent(id)}`,
  deadLetters: () => `${BASE}/dead-letters`,
  bulk: () => `${BASE}/bulk`,
};

const listeners = new Set<() => void>();
window.addEventListener('popstate', () => listeners.forEach((l) => l()));

export function navigate(href: string, options: { replace?: boolean } = {}): void {
  if (options.replace === true) history.replaceState(null, '', href);
  else history.pushState(null, '', href);
  listeners.forEach((l) => l());
}

/** The current location, re-rendered on links, the back button and navigate(). */
export function useLocation(): { readonly pathname: string; readonly search: URLSearchParams } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = (): void => setTick((n) => n + 1);
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, []);
  return { pathname: location.pathname, search: new URLSearchParams(location.search) };
}

/** A plain click on an in-app link moves without reloading; a modified click (new tab) is the browser's. */
export function followLink(event: MouseEvent, href: string): void {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey)
    return;
  event.preventDefault();
  navigate(href);
}
