/**
 * Sign-in with the user's token, as dstack's console: the token is checked with
 * `users/get_my_user` and kept in localStorage, so a reload stays signed in.
 */
import type { User } from '@dstack/core';
import { createContext, useContext } from 'react';
import { type Api, createApi } from './api';

const TOKEN_KEY = 'dstack.token';

export interface Session {
  user: User;
  api: Api;
  signOut(): void;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside a signed-in page');
  return session;
}

export const storedToken = (): string | null => localStorage.getItem(TOKEN_KEY);
export const forgetToken = (): void => localStorage.removeItem(TOKEN_KEY);

/**
 * Checks `token` against the server; keeps it and resolves with the user when it is valid.
 * `onSignedOut` is called when the server later refuses the token.
 */
export async function signIn(token: string, onSignedOut: () => void): Promise<{ user: User; api: Api }> {
  let signedIn = false;
  const api = createApi(token, () => {
    if (signedIn) onSignedOut();
  });
  const user = await api.post<User>('/api/users/get_my_user');
  localStorage.setItem(TOKEN_KEY, token);
  signedIn = true;
  return { user, api };
}
