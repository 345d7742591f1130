/**
 * `dstack init`: stores, for the current directory's Git repo, the credentials jobs clone it
 * with (`repos/init` with `repo_creds`, per project and user; the server keeps them encrypted).
 * `dstack apply` then keeps them instead of sending the public clone URL.
 */
import { gitWorkTreeRoot, readGitRepo } from '../code/git-repo.js';
import { cloneUrlOf, remoteRepoIdentity } from '../code/pack-code.js';
import { type RepoCredsOptions, resolveRepoCreds } from '../code/repo-creds.js';
import type { CliIo } from '../io.js';
import { CommandError } from '../output/command-error.js';
import { connect, type ProjectOption } from './connect.js';

export interface InitOptions extends ProjectOption, RepoCredsOptions {}

export async function initCommand(
  options: InitOptions,
  io: CliIo,
  directory = process.cwd(),
): Promise<number> {
  const root = await gitWorkTreeRoot(directory);
  if (root === null) {
    throw new CommandError(
      `Git repo not found: ${directory}. dstack init stores the credentials of a Git repo's remote; use files: for a plain directory`,
    );
  }
  const state = await readGitRepo(root);
  const { repoId, repoName } = remoteRepoIdentity(cloneUrlOf(state.remoteUrl, root));
  const creds = await resolveRepoCreds(state.remoteUrl, root, options);
  const client = await connect(options, io);
  await client.initRepo({
    repo_id: repoId,
    repo_info: { repo_type: 'remote', repo_name: repoName },
    repo_creds: creds,
  });
  io.stdout('OK\n');
  return 0;
}
