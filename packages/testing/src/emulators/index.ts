// `@dstack/testing/emulators`: the cloud emulators' toolkit, loadable by a plain Node process
// (the `pnpm emulator` command) as well as by tests.
export type { EmulatedHost, EmulatedHosts, HostLaunchRequest } from './emulated-hosts.js';
export {
  DEFAULT_EMULATED_HOSTS_NETWORK,
  DEFAULT_SSHD_TIMEOUT_MS,
  DockerEmulatedHosts,
  type DockerEmulatedHostsOptions,
  EMULATED_HOST_EMULATOR_LABEL,
  EMULATED_HOST_INSTANCE_LABEL,
  EMULATED_HOST_LABEL,
  HostTerminatedError,
} from './hosts/docker-emulated-hosts.js';
export {
  BUILD_HOST_IMAGE_SCRIPT,
  EMULATED_HOST_IMAGE,
  ensureEmulatedHostImage,
} from './hosts/emulated-host-image.js';
export { HostUserDataError } from './hosts/instance-boot-files.js';
