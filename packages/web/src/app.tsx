import { useEffect, useState } from 'react';
import { ApiError } from './api';
import { FleetsPage } from './pages/fleets-page';
import { OffersPage } from './pages/offers-page';
import { ProjectPage } from './pages/project-page';
import { ProjectsPage } from './pages/projects-page';
import { RunPage } from './pages/run-page';
import { RunsPage } from './pages/runs-page';
import { SignInPage } from './pages/sign-in-page';
import { UsersPage } from './pages/users-page';
import { Link, matchPath, navigate, usePath } from './router';
import { forgetToken, type Session, SessionContext, signIn, storedToken } from './session';

function Page({ path }: { path: string }) {
  let params = matchPath('/runs/:project/:run', path);
  if (params) return <RunPage project={params.project!} runName={params.run!} />;
  params = matchPath('/projects/:project', path);
  if (params) return <ProjectPage project={params.project!} />;
  if (path.startsWith('/fleets')) return <FleetsPage />;
  if (path.startsWith('/offers')) return <OffersPage />;
  if (path.startsWith('/projects')) return <ProjectsPage />;
  if (path.startsWith('/users')) return <UsersPage />;
  return <RunsPage />;
}

function Navigation({ session, path }: { session: Session; path: string }) {
  const links: Array<[href: string, title: string]> = [
    ['/runs', 'Runs'],
    ['/fleets', 'Fleets'],
    ['/offers', 'Offers'],
    ['/projects', 'Projects'],
    // Hidden from plain users: the server would list only themselves.
    ...(session.user.global_role === 'admin' ? [['/users', 'Users'] as [string, string]] : []),
  ];
  return (
    <header>
      <nav>
        <strong className="brand">dstack</strong>
        {links.map(([href, title]) => (
          <Link key={href} href={href} className={path.startsWith(href) ? 'current' : undefined}>
            {title}
          </Link>
        ))}
        <span className="spacer" />
        <span className="muted" data-testid="username">
          {session.user.username}
        </span>
        <button type="button" className="link" onClick={session.signOut}>
          Sign out
        </button>
      </nav>
    </header>
  );
}

export function App() {
  const path = usePath();
  const [session, setSession] = useState<Session | null>(null);
  const [restoring, setRestoring] = useState(() => storedToken() !== null);

  const signOut = () => {
    forgetToken();
    setSession(null);
  };
  const start = async (token: string) => {
    const { user, api } = await signIn(token, signOut);
    setSession({ user, api, signOut });
  };

  // A kept token signs in again after a reload; a revoked one is forgotten.
  useEffect(() => {
    const token = storedToken();
    if (!token) return;
    start(token)
      .catch((error: unknown) => {
        if (error instanceof ApiError && error.tokenRefused) forgetToken();
      })
      .finally(() => setRestoring(false));
  }, []);

  useEffect(() => {
    if (session && (path === '/' || path === '/login')) navigate('/runs', { replace: true });
  }, [session, path]);

  if (restoring) return <p className="muted center">Signing in…</p>;
  if (!session) return <SignInPage onSignIn={start} />;
  return (
    <SessionContext.Provider value={session}>
      <Navigation session={session} path={path} />
      <main>
        <Page path={path} />
      </main>
    </SessionContext.Provider>
  );
}
