/**
 * How a token from a user's repo creds reaches git, shared by the runner (the job's clone) and the
 * CLI (`dstack init` checks the token): a credential helper that answers git's `get` from the git
 * process's environment, so the token is never on a command line (which error messages repeat).
 */

/** The variables the credential helper reads. */
export const GIT_USERNAME_ENV = 'DSTACK_GIT_USERNAME';
export const GIT_TOKEN_ENV = 'DSTACK_GIT_TOKEN';

/** The user name sent with a token when the clone URL has none (GitLab wants `oauth2`; GitHub any). */
export const GIT_TOKEN_USERNAME = 'oauth2';

/** `credential.helper=` value: a shell function printing the user name and token from the environment. */
export const GIT_ENVIRONMENT_CREDENTIAL_HELPER = `!f() { test "$1" = get && printf "username=%s\\npassword=%s\\n" "$${GIT_USERNAME_ENV}" "$${GIT_TOKEN_ENV}"; }; f`;

/** The `-c` options that make git use only that helper (none configured elsewhere answers instead). */
export const GIT_ENVIRONMENT_CREDENTIAL_ARGS: readonly string[] = [
  '-c',
  'credential.helper=',
  '-c',
  `credential.helper=${GIT_ENVIRONMENT_CREDENTIAL_HELPER}`,
];

/** The environment for the helper: the URL's user name (or `oauth2`) and the token. */
export function gitTokenEnvironment(token: string, username: string | null): Record<string, string> {
  return { [GIT_USERNAME_ENV]: username ?? GIT_TOKEN_USERNAME, [GIT_TOKEN_ENV]: token };
}

/** `https://user:secret@host/x` → `https://user@host/x`, wherever URLs appear in the text. */
export function redactUrlPasswords(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/[^/@:\s]*):[^/@\s]*@/gi, '$1@');
}

/** `GIT_SSH_COMMAND` for a key file: only that key, host keys accepted (as dstack's runner), no prompt. */
export function gitSshCommand(keyFile: string): string {
  return `ssh -i '${keyFile}' -o IdentitiesOnly=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR`;
}

/** An SSH clone URL: `ssh://…` or scp-like `user@host:path` (what a `private_key` goes with). */
export function isSshCloneUrl(url: string): boolean {
  return /^ssh:\/\//i.test(url) || (!url.includes('://') && /^[^/@:]+@[^/:]+:/.test(url));
}
