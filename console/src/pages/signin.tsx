// The pages shown without a session: sign in, sign-in not configured, and the gateway unreachable.
import { PageTitle } from '../components.js';

export function SignInPage({ ended }: { ended: boolean }) {
  return (
    <main class="centered card">
      <PageTitle>Sign in</PageTitle>
      {ended ? <p role="status">Your session has ended. Sign in again to continue.</p> : <p>Sign in to manage your API keys, usage and billing.</p>}
      {/* A plain navigation: the gateway sends the browser on to the identity provider. */}
      <a class="button primary" href="/auth/login">
        Sign in
      </a>
    </main>
  );
}

export function SignInUnavailablePage() {
  return (
    <main class="centered card">
      <PageTitle>Sign-in is not configured</PageTitle>
      <p>This gateway has no identity provider for people to sign in with, so the console cannot open a session.</p>
      <p>
        An operator enables sign-in by setting <code>OIDC_CLIENT_ID</code> and the other sign-in settings (see the configuration guide). Until then, an operator can act for an
        account from a shell: <code>npx gateway token --user &lt;account id&gt;</code> prints a management token for the API.
      </p>
    </main>
  );
}

export function SessionFailedPage({ message, onRetry }: { message: string; onRetry: () => void }) {
  return (
    <main class="centered card">
      <PageTitle>The console cannot start</PageTitle>
      <p class="alert" role="alert">
        {message}
      </p>
      <button type="button" class="primary" onClick={onRetry}>
        Try again
      </button>
    </main>
  );
}
