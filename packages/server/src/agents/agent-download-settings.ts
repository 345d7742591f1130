/** Where launched hosts download the agents from. */
import { type Environment, urlVariable } from '../environment-variables.js';

export interface AgentDownloadSettings {
  /**
   * `DSTACK_SHIM_DOWNLOAD_URL`: where a cloud VM's bootstrap downloads the agent runtime (a tarball
   * as npm packs `@dstack/runner-runtime-linux-x64`: node with its loader and libraries, the shim and
   * the runner). The server reads it once to learn the sha256 and size the host checks
   * (`agentDownloadDigest`). Null: the npm registry's tarball of the release.
   */
  shimDownloadUrl: string | null;
  /**
   * `DSTACK_RUNNER_DOWNLOAD_URL`: where a container backend's entrypoint (Vast.ai) downloads the
   * runner's portable runtime (a `.tar.gz` of `@dstack/runner`'s `writePortableRuntimeArchive`).
   * Null: the npm registry's tarball of `@dstack/runner-runtime-linux-x64` of the release.
   */
  runnerDownloadUrl: string | null;
}

export function readAgentDownloadSettings(env: Environment): AgentDownloadSettings {
  return {
    shimDownloadUrl: urlVariable(env, 'DSTACK_SHIM_DOWNLOAD_URL'),
    runnerDownloadUrl: urlVariable(env, 'DSTACK_RUNNER_DOWNLOAD_URL'),
  };
}
