/**
 * The VM bootstrap every VM backend sends as user data (dstack's `get_user_data`): cloud-init
 * `#cloud-config` that authorizes the project key on the image's default user, writes the
 * instance's agent token to a root-only file, and starts a script that downloads the shim (one
 * npm tarball, unpacked; its single-file bundle runs on the host's `node`) and keeps it running
 * on the shim port, restarting it as dstack's `while true; do dstack-shim; sleep 3; done` does.
 * The same bytes for every backend, so one emulated host test covers them all.
 */
import { stringify } from 'yaml';
import { DSTACK_SHIM_HTTP_PORT } from '../agent-protocol/ports.js';
import type { InstanceConfiguration } from '../models/instances.js';
import { VERSION } from '../version.js';
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
/** Where the tarball is unpacked (npm tarballs hold everything under `package/`). */
export const VM_SHIM_DIRECTORY = '/opt/dstack/shim';
/** The bundle inside the @dstack/shim tarball (its `scripts/bundle.mjs` output, shipped in `dist`). */
export const SHIM_TARBALL_BUNDLE_PATH = 'package/dist/dstack-shim.bundle.mjs';
/** The runner's bundle next to it, which the shim's Docker runtime puts into containers. */
export const SHIM_TARBALL_RUNNER_BUNDLE_PATH = 'package/dist/dstack-runner.bundle.mjs';

/** The npm registry tarball of @dstack/shim at `version`: the default download location. */
export function shimTarballUrl(version: string = VERSION): string {
  return `https://registry.npmjs.org/@dstack/shim/-/shim-${version}.tgz`;
}

/**
 * The start script: download (curl or wget, a bounded number of tries), unpack, run in a loop.
 * The shim's runtime is `auto`: jobs run in their images where the VM image has Docker (as
 * dstack's VM images do), and as processes, refusing an image, where it has not.
 */
function startShimScript(downloadUrl: string): string {
  const bundle = `${VM_SHIM_DIRECTORY}/${SHIM_TARBALL_BUNDLE_PATH}`;
  const runnerBundle = `${VM_SHIM_DIRECTORY}/${SHIM_TARBALL_RUNNER_BUNDLE_PATH}`;
  return `#!/bin/sh
# dstack VM bootstrap: fetch the shim and keep it running (written by cloud-init).
url=${shellQuote(downloadUrl)}
dir=${VM_SHIM_DIRECTORY}
mkdir -p "$dir" ${VM_SHIM_HOME}
fetch() {
  if command -v curl >/dev/null 2>&1; then curl -fsSL --retry 3 -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then wget -q -O "$2" "$1"
  else echo "dstack: neither curl nor wget on this host" >&2; return 1
  fi
}
tries=0
until fetch "$url" "$dir/shim.tgz" && tar -xzf "$dir/shim.tgz" -C "$dir" && [ -f ${bundle} ]; do
  tries=$((tries + 1))
  if [ "$tries" -ge 30 ]; then echo "dstack: cannot download the shim from $url" >&2; exit 1; fi
  sleep 5
done
if ! command -v node >/dev/null 2>&1; then echo "dstack: node is not on this image" >&2; exit 1; fi
export DSTACK_SHIM_HOME=${VM_SHIM_HOME}
export DSTACK_SHIM_HTTP_PORT=${DSTACK_SHIM_HTTP_PORT}
while true; do
  node ${bundle} --home ${VM_SHIM_HOME} --http-port ${DSTACK_SHIM_HTTP_PORT} --runtime auto --runner-bundle ${runnerBundle} --token-file ${VM_SHIM_TOKEN_FILE}
  sleep 3
done
`;
}

/**
 * The user data for `config`: its `ssh_keys` authorized (cloud-init gives them to the image's
 * default user), its `agent_token` for the shim, the shim from `config.agent_download_url`
 * (default: `shimTarballUrl()`). Throws when the result exceeds `MAX_VM_USER_DATA_BYTES`.
 */
export function buildVmUserData(
  config: Pick<InstanceConfiguration, 'ssh_keys' | 'agent_token' | 'agent_download_url'>,
): string {
  const downloadUrl = config.agent_download_url ?? shimTarballUrl();
  const cloudConfig = {
    ssh_authorized_keys: config.ssh_keys.map((key) => key.public.trim()),
    write_files: [
      { path: VM_SHIM_TOKEN_FILE, content: config.agent_token, permissions: '0600', owner: 'root:root' },
      {
        path: VM_SHIM_START_SCRIPT,
        content: startShimScript(downloadUrl),
        permissions: '0700',
        owner: 'root:root',
      },
    ],
    runcmd: [['sh', '-c', `nohup ${VM_SHIM_START_SCRIPT} >>${VM_SHIM_LOG} 2>&1 </dev/null &`]],
  };
  const userData = `#cloud-config\n${stringify(cloudConfig, { lineWidth: 0 })}`;
  const size = Buffer.byteLength(userData, 'utf8');
  if (size > MAX_VM_USER_DATA_BYTES) {
    throw new Error(`VM user data is ${size} bytes, over the ${MAX_VM_USER_DATA_BYTES}-byte limit of EC2`);
  }
  return userData;
}
