import { useEffect, useState } from 'preact/hooks';
import { whenUnauthorized } from './api/graphql-client';
import { Link } from './components/link';
import { BulkOperations } from './pages/bulk-operations';
import { DeadLetters } from './pages/dead-letters';
import { Job } from './pages/job';
import { Jobs } from './pages/jobs';
import { Overview } from './pages/overview';
import { Run } from './pages/run';
import { SignIn } from './pages/sign-in';
import { paths, routeOf, useLocation, type Route } from './router';
import { forgetToken, storedToken, storeToken, tokenKind } from './session';

export function App() {
  const [token, setToken] = useState<string | null>(storedToken());
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const { pathname } = useLocation();
  const route = routeOf(pathname);

  useEffect(
    () =>
      whenUnauthorized(() => {
        forgetToken();
        setToken(null);
        setNotice('The API no longer accepts this token: sign in again.');
      }),
    [],
  );
  // A new page: its title, and the keyboard's focus on its heading (as a page load would put it at the top).
  useEffect(() => {
    document.title = `${titleOf(route)} · Chronicle`;
    if (token !== null) document.querySelector<HTMLElement>('main h1')?.focus();
  }, [pathname, token]);

  if (token === null)
    return (
      <SignIn
        notice={notice}
        onSignedIn={(t) => {
          storeToken(t);
          setNotice(undefined);
          setToken(t);
        }}
      />
    );

  const signOut = (): void => {
    forgetToken();
    setToken(null);
  };
  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Chronicle</span>
        <nav aria-label="Dashboard">
          <Link href={paths.overview()} current={route.page === 'overview'}>
            Overview
          </Link>
          <Link href={paths.jobs()} current={route.page === 'jobs' || route.page === 'job'}>
            Jobs
          </Link>
          <Link href={paths.deadLetters()} current={route.page === 'dead-letters'}>
            Dead letters
          </Link>
          <Link href={paths.bulk()} current={route.page === 'bulk'}>
            Bulk operations
          </Link>
        </nav>
        <span class="who">
          {tokenKind(token)} token{' '}
          <button type="button" onClick={signOut}>
            Sign out
          </button>
        </span>
      </header>
      <main id="main">
        <Page route={route} token={token} />
      </main>
    </>
  );
}

function Page({ route, token }: { route: Route; token: string }) {
  switch (route.page) {
    case 'overview':
      return <Overview token={token} />;
    case 'jobs':
      return <Jobs token={token} />;
    case 'job':
      return <Job key={route.name} token={token} name={route.name} />;
    case 'run':
      return <Run key={route.id} token={token} id={route.id} />;
    case 'dead-letters':
      return <DeadLetters token={token} />;
    case 'bulk':
      return <BulkOperations token={token} />;
    case 'not-found':
      return (
        <>
          <h1 tabIndex={-1}>Not found</h1>
          <p>
            No such page. <Link href={paths.overview()}>Back to the overview</Link>.
          </p>
        </>
      );
    default:
      return assertNever(route);
  }
}

function titleOf(route: Route): string {
  switch (route.page) {
    case 'overview':
      return 'Overview';
    case 'jobs':
      return 'Jobs';
    case 'job':
      return `Job ${route.name}`;
    case 'run':
      return `Run ${route.id}`;
    case 'dead-letters':
      return 'Dead letters';
    case 'bulk':
      return 'Bulk operations';
    case 'not-found':
      return 'Not found';
    default:
      return assertNever(route);
  }
}

function assertNever(value: never): never {
  throw new Error(`unexpected route ${JSON.stringify(value)}`);
}
