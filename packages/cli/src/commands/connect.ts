import { DstackApiClient } from '../api/client.js';
import { cliConfigPath, loadCliConfig, selectProject } from '../config/cli-config.js';

export interface ProjectOption {
  /** The project to use (`--project`, env `DSTACK_PROJECT`). Default: the default project. */
  project?: string;
}

/** A client for the chosen project of `~/.dstack/config.yml`. */
export async function connect(options: ProjectOption): Promise<DstackApiClient> {
  const config = await loadCliConfig(cliConfigPath());
  const project = selectProject(config, options.project);
  return new DstackApiClient({ url: project.url, token: project.token, projectName: project.name });
}
