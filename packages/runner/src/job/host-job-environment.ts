/**
 * What a job takes from the environment of the process its runner lives in, when that process is
 * not a container made for the job: the shim's process runtime runs the runner inside the shim,
 * whose environment is the server's (local backend) or the host's (SSH fleet hosts, VMs), with
 * their tokens and credentials. dstack's jobs always start from a container's environment instead.
 */

import { pickEnvironmentVariables } from '@dstack/core/agent-protocol';

/**
 * The host's variables a job keeps: where programs are, who and where the user is, the locale,
 * the time zone, the terminal type and the temporary directory. Nothing else of the host's
 * environment reaches a job; the runner adds the DSTACK_* variables, secrets and the job's `env`.
 */
export const HOST_JOB_VARIABLES = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LANGUAGE',
  'LC_ALL',
  'TZ',
  'TERM',
  'TMPDIR',
] as const;

/** The {@link HOST_JOB_VARIABLES} that `hostEnv` sets, and nothing else of it. */
export function hostJobEnvironment(
  hostEnv: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  return pickEnvironmentVariables(hostEnv, HOST_JOB_VARIABLES);
}
