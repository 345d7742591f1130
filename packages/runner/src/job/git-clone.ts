/**
 * Clones a job's remote repo with the user's repo credentials (dstack's runner `prepareGit`):
 * an HTTP(S) clone URL with an `oauth_token`, an SSH clone URL with a `private_key`, or a public
 * URL with neither. Secrets never reach git's command line (which error messages repeat): the
 * token goes through a credential helper reading the environment of the git process, the key
 * through a 0600 file named by `GIT_SSH_COMMAND`, removed once the clone is done.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  GIT_ENVIRONMENT_CREDENTIAL_ARGS,
  gitSshCommand,
  gitTokenEnvironment,
  isSshCloneUrl,
  type RemoteRepoCreds,
  redactUrlPasswords as redactUrl,
} from '@dstack/core/agent-protocol';
import { runTool } from './run-tool.js';

export interface CloneRequest {
  repoDir: string;
  /** The repo's name, for error messages. */
  repoName: string;
  creds: RemoteRepoCreds;
  /** The branch to check out; null: the remote's default branch. */
  branch: string | null;
  /** The commit to move the branch to; null: the branch's head. */
  hash: string | null;
  /** `git clone --single-branch`: fetch only `branch` (or the remote's HEAD). */
  singleBranch: boolean;
  /** Where the SSH key file may be written (the runner's own directory, not the job's). */
  scratchDir: string;
}

/** The user name in an HTTP(S) URL, if any: it is sent with the token. */
function urlUsername(url: string): string | null {
  if (!URL.canParse(url)) return null;
  const name = decodeURIComponent(new URL(url).username);
  return name === '' ? null : name;
}

/** Clones the repo at its branch and commit, using the credentials. Throws a message naming the repo. */
export async function cloneRepo(request: CloneRequest): Promise<void> {
  const { creds } = request;
  const auth = await gitAuthFor(request);
  try {
    const branchArgs = request.branch === null ? [] : ['--branch', request.branch];
    const singleBranchArgs = request.singleBranch ? ['--single-branch'] : [];
    await runGit(
      dirname(request.repoDir),
      [
        ...auth.configArgs,
        'clone',
        '--quiet',
        ...singleBranchArgs,
        ...branchArgs,
        '--',
        creds.clone_url,
        request.repoDir,
      ],
      auth.env,
    ).catch((error: Error) => {
      throw new Error(cloneFailureMessage(request, error.message));
    });
  } finally {
    await auth.cleanUp();
  }
  if (request.hash !== null) await runGit(request.repoDir, ['reset', '--quiet', '--hard', request.hash], {});
}

function cloneFailureMessage(request: CloneRequest, gitMessage: string): string {
  const { creds } = request;
  const where = `repo ${request.repoName} (${redactUrl(creds.clone_url)})`;
  if (creds.oauth_token || creds.private_key) {
    return `cannot clone ${where} with the credentials from \`dstack init\` (run it again with a valid --token or --git-identity): ${gitMessage}`;
  }
  return `cannot clone ${where}: if it is private, run \`dstack init\` in the repo (with --token or --git-identity) so that jobs can clone it: ${gitMessage}`;
}

interface GitAuth {
  /** `-c` options before the git subcommand. */
  configArgs: string[];
  env: Record<string, string>;
  cleanUp(): Promise<void>;
}

async function gitAuthFor(request: CloneRequest): Promise<GitAuth> {
  const { creds } = request;
  // The runner's (or image's) own credential helpers must not answer for the user.
  const noHelpers = ['-c', 'credential.helper='];
  const nothingToClean = async () => {};
  if (creds.private_key && isSshCloneUrl(creds.clone_url)) {
    await mkdir(request.scratchDir, { recursive: true, mode: 0o700 });
    const keyDir = await mkdtemp(join(request.scratchDir, 'git-key-'));
    const keyFile = join(keyDir, 'id');
    // OpenSSH refuses a key without its final newline.
    const key = creds.private_key.endsWith('\n') ? creds.private_key : `${creds.private_key}\n`;
    await writeFile(keyFile, key, { mode: 0o600 });
    return {
      configArgs: noHelpers,
      env: { GIT_SSH_COMMAND: gitSshCommand(keyFile) },
      cleanUp: () => rm(keyDir, { recursive: true, force: true }),
    };
  }
  if (creds.oauth_token && !isSshCloneUrl(creds.clone_url)) {
    return {
      configArgs: [...GIT_ENVIRONMENT_CREDENTIAL_ARGS],
      env: gitTokenEnvironment(creds.oauth_token, urlUsername(creds.clone_url)),
      cleanUp: nothingToClean,
    };
  }
  if (creds.private_key || creds.oauth_token) {
    const kind = creds.private_key
      ? 'an SSH key needs an SSH clone URL'
      : 'a token needs an HTTP(S) clone URL';
    throw new Error(
      `repo ${request.repoName}: the credentials from \`dstack init\` do not fit ${redactUrl(creds.clone_url)} (${kind}); run \`dstack init\` again`,
    );
  }
  return {
    configArgs: noHelpers,
    // A public SSH URL still must not ask about host keys on a terminal nobody reads.
    env: {
      GIT_SSH_COMMAND: 'ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes',
    },
    cleanUp: nothingToClean,
  };
}

/** Runs git without a terminal prompt (a clone that needs credentials fails instead of hanging). */
export function runGit(cwd: string, args: string[], env: Record<string, string>): Promise<void> {
  return runTool('git', args, {
    cwd,
    env: { GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: '', SSH_ASKPASS: '', ...env },
    // The message shows the arguments without `-c` options, URLs without passwords.
    shownArgs: args.filter((arg, index) => arg !== '-c' && args[index - 1] !== '-c').map(redactUrl),
    redact: redactUrl,
  });
}
