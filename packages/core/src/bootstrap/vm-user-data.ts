/**
 * The VM bootstrap every VM backend sends as user data (dstack's `get_user_data`): cloud-init
 * `#cloud-config` that authorizes the project key on the image's default user, writes the
 * instance's agent token to a root-only file, and a script that cloud-init runs at every boot
 * (`scripts/per-boot`): it downloads the agent runtime (node with its own loader and libraries, the
 * shim and the runner; see `agent-runtime-install.ts`), verifies and keeps it, and keeps the shim
 * running from it on the shim port, restarting it as dstack's `while true; do dstack-shim; sleep 3;
 * done` does. The image needs no node: a POSIX shell, tar, and curl or wget. The same bytes for
 * every backend, so one emulated host test covers them all.
 */
import { stringify } from 'yaml';
import { DSTACK_SHIM_HTTP_PORT } from '../agent-protocol/ports.js';
import type { InstanceConfiguration } from '../models/instance-configuration.js';
import {
  AGENT_BOOTSTRAP_FAILURE_MARKER,
  AGENT_RUNTIME_SHIM_FILE,
  type AgentRuntimeDownload,
  agentRuntimeInstallLines,
  agentRuntimeTarballUrl,
} from './agent-runtime-install.js';
import { shellQuote } from './shell-quote.js';

/** EC2 refuses user data over 16 KB (before base64); GCP and others allow more. */
export const MAX_VM_USER_DATA_BYTES = 16 * 1024;

/** The shim's home on the host (dstack's `DSTACK_SHIM_HOME`). */
export const VM_SHIM_HOME = '/root/.dstack';
/** Where the token is written (mode 0600, root's); the shim reads it with `--token-file`. */
export const VM_SHIM_TOKEN_FILE = '/root/.dstack/shim-token';
/** The script that fetches and runs the shim; its output goes to `VM_SHIM_LOG`. */
export const VM_SHIM_START_SCRIPT = '/usr/local/lib/dstack/start-shim.sh';
export const VM_SHIM_LOG = '/var/log/dstack-shim.log';
/** Where the agent runtime is downloaded and unpacked (kept across reboots). */
export const VM_AGENT_RUNTIME_DIRECTORY = '/opt/dstack/agent';
/** cloud-init runs the scripts in this directory at every boot, the first one included. */
export const VM_PER_BOOT_SCRIPT = '/var/lib/cloud/scripts/per-boot/dstack-shim';
/** The shim's restarts that come this soon after its start count as failing to start. */
const SHIM_QUICK_EXIT_SECONDS = 10;
/** After this many such restarts in a row the bootstrap gives up with the failure marker. */
const SHIM_QUICK_EXITS = 5;
/** How long the shim waits for the image's Docker daemon, which may start beside cloud-init. */
const DOCKER_START_TIMEOUT_SECONDS = 60;

/**
 * The start script: get the runtime, then run the shim from it in a loop. The shim's runtime is
 * `auto`: jobs run in their images where the VM image has Docker (as dstack's VM images do), and as
 * processes, refusing an image, where it has not (a daemon installed but still starting is waited
 * for); its Docker runtime mounts this same runtime (`--runner-runtime`) into containers.
 */
function startShimScript(download: AgentRuntimeDownload, backendCommands: readonly string[]): string {
  return `#!/bin/sh
# dstack VM bootstrap: get the agent runtime and keep the shim running (written by cloud-init).
${backendCommandLines(backendCommands)}${agentRuntimeInstallLines(download, VM_AGENT_RUNTIME_DIRECTORY)}mkdir -p ${VM_SHIM_HOME}
export DSTACK_SHIM_HOME=${VM_SHIM_HOME} DSTACK_SHIM_HTTP_PORT=${DSTACK_SHIM_HTTP_PORT}
quick=0
while true; do
  t=$(date +%s)
  "$@" "$root/${AGENT_RUNTIME_SHIM_FILE}" --home ${VM_SHIM_HOME} --http-port ${DSTACK_SHIM_HTTP_PORT} --runtime auto --docker-start-timeout ${DOCKER_START_TIMEOUT_SECONDS} --runner-runtime "$root" --token-file ${VM_SHIM_TOKEN_FILE}
  if [ $(($(date +%s) - t)) -lt ${SHIM_QUICK_EXIT_SECONDS} ]; then quick=$((quick + 1)); else quick=0; fi
  [ "$quick" -ge ${SHIM_QUICK_EXITS} ] && fail "the shim exited ${SHIM_QUICK_EXITS} times in a row within ${SHIM_QUICK_EXIT_SECONDS} s of its start"
  sleep 3
done
`;
}

/**
 * The backend's own setup commands (dstack's `backend_specific_commands`: Nebius's sshd and Docker
 * settings), each in a subshell, in order, before anything else: dstack chains them before the
 * shim's commands with `&&`, so a failed one stops the bootstrap, here with the failure marker the
 * server reads. They run at every boot, as the start script does, so they must be idempotent.
 */
function backendCommandLines(commands: readonly string[]): string {
  return commands
    .map((command, index) => {
      if (command.trim() === '') throw new Error(`backend commands[${index}]: empty command`);
      const failure = `${AGENT_BOOTSTRAP_FAILURE_MARKER} the backend's setup command failed: ${command}`;
      return `(\n${command}\n) || { echo ${shellQuote(failure)}; exit 1; }\n`;
    })
    .join('');
}

/** A file cloud-init writes (`write_files`), root's. */
interface CloudInitFile {
  path: string;
  content: string;
  permissions: string;
}

/**
 * A `#cloud-config` that authorizes `sshKeys`, writes `files` and the agent's start script, and
 * starts that script at every boot in the background, its output in `log` (cloud-init waits for a
 * per-boot script: only the start script's loop goes to the background). Throws, naming `what`,
 * when it exceeds `MAX_VM_USER_DATA_BYTES`. Shared by the shim's VMs and gateway instances.
 */
export function agentCloudConfig(options: {
  what: string;
  sshKeys: readonly string[];
  files: readonly CloudInitFile[];
  startScript: { path: string; content: string };
  perBootScriptPath: string;
  log: string;
}): string {
  const { startScript } = options;
  const files: CloudInitFile[] = [
    ...options.files,
    { path: startScript.path, content: startScript.content, permissions: '0700' },
    {
      path: options.perBootScriptPath,
      content: `#!/bin/sh\nnohup ${startScript.path} >>${options.log} 2>&1 </dev/null &\n`,
      permissions: '0700',
    },
  ];
  const cloudConfig = {
    ssh_authorized_keys: options.sshKeys.map((key) => key.trim()),
    write_files: files.map((file) => ({ ...file, owner: 'root:root' })),
  };
  const userData = `#cloud-config\n${stringify(cloudConfig, { lineWidth: 0 })}`;
  const size = Buffer.byteLength(userData, 'utf8');
  if (size > MAX_VM_USER_DATA_BYTES) {
    throw new Error(
      `${options.what} user data is ${size} bytes, over the ${MAX_VM_USER_DATA_BYTES}-byte limit of EC2`,
    );
  }
  return userData;
}

/** The agent runtime an instance downloads: `agent_download_url` (verified when the digest and size are given), default this version's tarball. */
export function agentRuntimeDownloadOf(
  config: Pick<InstanceConfiguration, 'agent_download_url' | 'agent_download_sha256' | 'agent_download_size'>,
): AgentRuntimeDownload {
  return {
    url: config.agent_download_url ?? agentRuntimeTarballUrl(),
    sha256: config.agent_download_sha256 ?? null,
    size: config.agent_download_size ?? null,
  };
}

/** What a backend adds to the VM bootstrap of `buildVmUserData` and `buildVmBootstrapScript`. */
export interface VmBootstrapOptions {
  /**
   * Shell commands the host runs as root before the agent runtime is fetched and the shim started
   * (dstack's `get_user_data(…, backend_specific_commands)`), at every boot; one that fails stops
   * the bootstrap with `AGENT_BOOTSTRAP_FAILURE_MARKER` naming it. Default none.
   */
  backendCommands?: readonly string[];
}

/**
 * The user data for `config`: its `ssh_keys` authorized (cloud-init gives them to the image's
 * default user), its `agent_token` for the shim, the agent runtime from `config.agent_download_url`
 * (default: `agentRuntimeTarballUrl()`), verified against `agent_download_sha256` and
 * `agent_download_size` when given, after the backend's `options.backendCommands`. Throws when the
 * result exceeds `MAX_VM_USER_DATA_BYTES`.
 */
export function buildVmUserData(
  config: Pick<
    InstanceConfiguration,
    'ssh_keys' | 'agent_token' | 'agent_download_url' | 'agent_download_sha256' | 'agent_download_size'
  >,
  options: VmBootstrapOptions = {},
): string {
  return agentCloudConfig({
    what: 'VM',
    sshKeys: config.ssh_keys.map((key) => key.public),
    files: [{ path: VM_SHIM_TOKEN_FILE, content: config.agent_token, permissions: '0600' }],
    startScript: {
      path: VM_SHIM_START_SCRIPT,
      content: startShimScript(agentRuntimeDownloadOf(config), options.backendCommands ?? []),
    },
    perBootScriptPath: VM_PER_BOOT_SCRIPT,
    log: VM_SHIM_LOG,
  });
}

/**
 * The same bootstrap as `buildVmUserData`, as one shell script for providers without cloud-init
 * user data: Lambda's instances, where the backend runs it over SSH as root once the instance is
 * up (dstack runs `get_shim_commands` there the same way), and startup scripts of providers that
 * run a script at first boot (Verda). It writes the token (root-only) and the start script, hooks
 * the start script into cloud-init's per-boot scripts (so a reboot brings the shim back where the
 * image runs cloud-init), and starts it in the background unless it already runs: running the
 * script twice (a retried SSH call) starts one shim. The keys are the provider's business (its
 * SSH key API), not the script's. The token goes in the script's text, never on a command line:
 * feed the script on stdin (`sudo sh -s`) or as the provider's startup script.
 */
export function buildVmBootstrapScript(
  config: Pick<
    InstanceConfiguration,
    'agent_token' | 'agent_download_url' | 'agent_download_sha256' | 'agent_download_size'
  >,
  options: VmBootstrapOptions = {},
): string {
  const startScript = startShimScript(agentRuntimeDownloadOf(config), options.backendCommands ?? []);
  const perBoot = `#!/bin/sh\nnohup ${VM_SHIM_START_SCRIPT} >>${VM_SHIM_LOG} 2>&1 </dev/null &\n`;
  return `#!/bin/sh
# dstack VM bootstrap without user data: write the shim's token and start script, start it once.
set -e
# Already started (a repeated call): leave it be; rewriting a script sh is running corrupts it.
if pgrep -f ${VM_SHIM_START_SCRIPT} >/dev/null 2>&1; then exit 0; fi
mkdir -p ${VM_SHIM_HOME} "$(dirname ${VM_SHIM_START_SCRIPT})" "$(dirname ${VM_PER_BOOT_SCRIPT})"
${heredocFile(VM_SHIM_TOKEN_FILE, config.agent_token, '0600')}
${heredocFile(VM_SHIM_START_SCRIPT, startScript, '0700')}
${heredocFile(VM_PER_BOOT_SCRIPT, perBoot, '0700')}
nohup ${VM_SHIM_START_SCRIPT} >>${VM_SHIM_LOG} 2>&1 </dev/null &
`;
}

/**
 * Shell lines writing `content` to `path` with `mode`, through a quoted here-document (no
 * expansion), created root-only (umask 077 in a subshell: the token is never readable by others,
 * while the shim's log, made later, stays readable by the login user the server reads it as).
 */
function heredocFile(path: string, content: string, mode: string): string {
  const end = 'DSTACK_BOOTSTRAP_EOF';
  if (content.includes(end)) throw new Error(`${path}: the content holds the here-document end ${end}`);
  const body = content.endsWith('\n') ? content : `${content}\n`;
  return `(umask 077 && cat >${path} <<'${end}'\n${body}${end}\n)\nchmod ${mode} ${path}`;
}
