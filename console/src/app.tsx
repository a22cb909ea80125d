// The console's shell: the session decides between the sign-in pages and the signed-in layout,
// whose navigation landmark names every page.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiContext, apiOf } from './api.js';
import { Session, type SessionState, type SessionUser } from './session.js';
import { BASE, Link, navigate, usePath } from './router.js';
import { SignInPage, SignInUnavailablePage, SessionFailedPage } from './pages/signin.js';
import { KeysPage } from './pages/keys.js';
import { UsagePage } from './pages/usage.js';
import { RequestsPage } from './pages/requests.js';
import { RequestDetailPage } from './pages/request-detail.js';
import { BillingPage } from './pages/billing.js';
import { TasksPage } from './pages/tasks.js';
import { ByokPage } from './pages/byok.js';
import { WebhookPage } from './pages/webhook.js';
import { ModelsPage } from './pages/models.js';
import { PageTitle } from './components.js';

const NAVIGATION = [
  { path: '/keys', name: 'API keys' },
  { path: '/usage', name: 'Usage' },
  { path: '/requests', name: 'Requests' },
  { path: '/billing', name: 'Billing' },
  { path: '/tasks', name: 'Tasks' },
  { path: '/byok', name: 'BYOK' },
  { path: '/webhook', name: 'Webhook' },
  { path: '/models', name: 'Models' },
] as const;

function pageFor(path: string) {
  const detail = /^\/requests\/([^/]+)$/.exec(path);
  if (detail) return <RequestDetailPage id={decodeURIComponent(detail[1]!)} />;
  switch (path) {
    case '/keys':
      return <KeysPage />;
    case '/usage':
      return <UsagePage />;
    case '/requests':
      return <RequestsPage />;
    case '/billing':
      return <BillingPage />;
    case '/tasks':
      return <TasksPage />;
    case '/byok':
      return <ByokPage />;
    case '/webhook':
      return <WebhookPage />;
    case '/models':
      return <ModelsPage />;
    default:
      return <NotFoundPage />;
  }
}

function NotFoundPage() {
  return (
    <>
      <PageTitle>Page not found</PageTitle>
      <p>
        The console has no page at this address. <Link to="/keys">Go to your API keys</Link>.
      </p>
    </>
  );
}

export function App() {
  const [state, setState] = useState<SessionState>({ kind: 'loading' });
  const session = useMemo(() => new Session(setState), []);
  const api = useMemo(() => apiOf(session), [session]);
  const path = usePath();

  useEffect(() => {
    void session.start();
  }, [session]);

  // The root and the sign-in page lead to the keys once signed in; any page leads to sign-in when not.
  useEffect(() => {
    if (state.kind === 'signed-in' && (path === '/' || path === '/signin')) navigate('/keys', { replace: true });
    if (state.kind === 'signed-out' && path !== '/signin') navigate('/signin', { replace: true });
  }, [state.kind, path]);

  switch (state.kind) {
    case 'loading':
      return (
        <main class="centered">
          <p role="status">Loading the console…</p>
        </main>
      );
    case 'signed-out':
      return <SignInPage ended={state.ended} />;
    case 'unavailable':
      return <SignInUnavailablePage />;
    case 'failed':
      return <SessionFailedPage message={state.message} onRetry={() => void session.start()} />;
    case 'signed-in':
      return (
        <ApiContext.Provider value={api}>
          <Layout path={path} user={state.user} onSignOut={() => void session.signOut()} />
        </ApiContext.Provider>
      );
  }
}

function Layout({ path, user, onSignOut }: { path: string; user: SessionUser; onSignOut: () => void }) {
  const section = `/${path.split('/')[1] ?? ''}`;
  const main = useRef<HTMLElement>(null);
  const firstPath = useRef(path);
  // After moving to another page, focus its content, as a full page load would start there.
  useEffect(() => {
    if (path !== firstPath.current) main.current?.focus();
    firstPath.current = '';
  }, [path]);
  return (
    <div class="shell">
      <a class="skip-link" href="#main">
        Skip to the page
      </a>
      <header class="topbar">
        <a class="brand" href={`${BASE}/keys`}>
          Gateway console
        </a>
        <span class="who">{user.email ?? user.id}</span>
        <button type="button" class="signout" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <nav class="sidenav" aria-label="Console">
        <ul>
          {NAVIGATION.map((item) => (
            <li key={item.path}>
              <Link to={item.path} aria-current={section === item.path ? 'page' : undefined}>
                {item.name}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <main class="content" id="main" tabIndex={-1} ref={main}>
        {pageFor(path)}
      </main>
    </div>
  );
}
