import { useState } from 'preact/hooks';
import { describeError, graphql, isUnauthorized } from '../api/graphql-client';
import { WHO_CAN_SEE } from '../api/operations';

/** A team's or the admin's token, checked with the API before it is kept for the tab. */
export function SignIn(props: { onSignedIn: (token: string) => void; notice?: string | undefined }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | undefined>(undefined);
  const [checking, setChecking] = useState(false);

  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    const candidate = token.trim();
    if (candidate === '') {
      setError('Enter a token.');
      return;
    }
    setChecking(true);
    setError(undefined);
    try {
      await graphql(candidate, WHO_CAN_SEE);
      props.onSignedIn(candidate);
    } catch (err) {
      setError(isUnauthorized(err) ? 'The API refused this token.' : `Cannot sign in: ${describeError(err)}`);
    } finally {
      setChecking(false);
    }
  };

  return (
    <main id="main" class="sign-in">
      <h1>Chronicle</h1>
      <form onSubmit={submit} aria-describedby="sign-in-help">
        <h2>Sign in</h2>
        <p id="sign-in-help">
          With a team token you see your team's queues, jobs and runs; with the admin token, every team's. The token
          stays in this tab until you close it.
        </p>
        {props.notice !== undefined && <p class="notice">{props.notice}</p>}
        <label for="token">API token</label>
        <input
          id="token"
          name="token"
          type="password"
          autoComplete="off"
          spellcheck={false}
          required
          value={token}
          aria-invalid={error !== undefined}
          aria-describedby={error !== undefined ? 'token-error' : undefined}
          onInput={(e) => setToken((e.target as HTMLInputElement).value)}
        />
        {error !== undefined && (
          <p id="token-error" class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={checking}>
          {checking ? 'Checking…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
