/**
 * How a host gets the agent runtime (`@dstack/runner-runtime-linux-x64`: node with its own loader
 * and libraries, the shim's bundle `shim.mjs` and the runner's `runner.mjs`) and starts the shim
 * from it, so the host needs no node of its own: only a POSIX `sh`, `tar` with gzip, curl or wget,
 * and `sha256sum` (or `openssl`) when the digest is known. The VM bootstrap (`buildVmUserData`)
 * runs these lines at every boot.
 *
 * The download is kept across reboots: the archive is fetched into a file of its own and resumed
 * (`curl -C -`, `wget -c`) while it is shorter than the size the server knows; a complete file is
 * checked against that size and sha256 before it is unpacked, and a mismatch is removed and
 * fetched again. A failed download is tried again, except when the server answers a client error
 * that another try cannot mend (a 4xx other than 408, 416 and 429: the URL is wrong or refused). Once unpacked, `<directory>/installed` records the URL and digest, so a later boot
 * starts the shim at once. When the runtime cannot be had (the tries run out, no curl or wget, it
 * does not start), one line starting with `AGENT_BOOTSTRAP_FAILURE_MARKER` goes to the output and
 * the script stops: the server reads it from the bootstrap log over SSH and fails the job with it.
 */
import { RUNTIME_ARCHIVE_ROOTS, runnerRuntimeTarballUrl } from './container-entrypoint.js';
import { shellQuote } from './shell-quote.js';

/** The shim's bundle in the agent runtime, beside `runner.mjs`. */
export const AGENT_RUNTIME_SHIM_FILE = 'shim.mjs';
/** The runner's bundle in the agent runtime (the portable runtime's `runner.mjs`). */
export const AGENT_RUNTIME_RUNNER_FILE = 'runner.mjs';
/** Starts the one line a failed bootstrap writes; what follows it is the cause. */
export const AGENT_BOOTSTRAP_FAILURE_MARKER = 'dstack-agent-bootstrap-failed:';
/** Download attempts before the bootstrap gives up, `AGENT_DOWNLOAD_RETRY_SECONDS` apart. */
export const AGENT_DOWNLOAD_ATTEMPTS = 10;
export const AGENT_DOWNLOAD_RETRY_SECONDS = 5;

/** The published agent runtime at `version` (the npm tarball the container entrypoint takes too). */
export const agentRuntimeTarballUrl = runnerRuntimeTarballUrl;

/** Where the runtime comes from, and what the server knows of it. */
export interface AgentRuntimeDownload {
  url: string;
  /** Hex sha256 of the archive; null: not verified. */
  sha256?: string | null;
  /** Its size in bytes; null: unknown (then a partial download is not resumed). */
  size?: number | null;
}

/**
 * Shell lines that leave the unpacked runtime's root in `$root` and the command that starts its
 * node (loader, its options, `bin/node`) in `"$@"`; `directory` is created. On failure they print
 * the marker line and `exit 1`.
 */
export function agentRuntimeInstallLines(
  download: AgentRuntimeDownload,
  directory: string,
  retry: { attempts: number; seconds: number } = {
    attempts: AGENT_DOWNLOAD_ATTEMPTS,
    seconds: AGENT_DOWNLOAD_RETRY_SECONDS,
  },
): string {
  if (!/^https?:\/\//.test(download.url)) {
    throw new Error(
      `agent_download_url: expected an http(s) URL of the agent runtime, got "${download.url}"`,
    );
  }
  const sha256 = download.sha256 ?? '';
  if (sha256 !== '' && !/^[0-9a-f]{64}$/.test(sha256)) {
    throw new Error(`agent_download_sha256: expected 64 lowercase hex digits, got "${sha256}"`);
  }
  const size = download.size ?? '';
  if (size !== '' && !(Number.isSafeInteger(size) && size > 0)) {
    throw new Error(`agent_download_size: expected a positive integer, got ${size}`);
  }
  const roots = RUNTIME_ARCHIVE_ROOTS.map((root) => `"$dir/${root}"`).join(' ');
  return `url=${shellQuote(download.url)} sha=${sha256} size=${size}
dir=${shellQuote(directory)} file=${shellQuote(`${directory}/runtime.tgz`)}
mkdir -p "$dir" || exit 1
fail() { echo "${AGENT_BOOTSTRAP_FAILURE_MARKER} $*"; exit 1; }
got() { if [ -f "$file" ]; then wc -c <"$file" | tr -d ' '; else echo 0; fi; }
download() {
  if [ -z "$size" ] || [ "$(got)" -gt "$size" ]; then rm -f "$file"; fi
  [ -n "$size" ] && [ "$(got)" -eq "$size" ] && return 0
  if command -v curl >/dev/null 2>&1; then
    http=$(curl -fsSL -w '%{http_code}' --connect-timeout 10 -C - -o "$file" "$url"); s=$?
    [ "$s" -eq 33 ] && rm -f "$file"; return "$s"
  elif command -v wget >/dev/null 2>&1; then wget -q -c -O "$file" "$url"
  else fail "neither curl nor wget on this host"
  fi
}
verify() {
  [ -z "$size" ] || [ "$(got)" -eq "$size" ] || return 1
  [ -z "$sha" ] && return 0
  s=$( (sha256sum "$file" || openssl dgst -sha256 -r "$file") 2>/dev/null | cut -d' ' -f1)
  [ -n "$s" ] || fail "neither sha256sum nor openssl on this host to verify the agent runtime"
  [ "$s" = "$sha" ] && return 0
  echo "dstack: $url has sha256 $s, expected $sha"; rm -f "$file"; return 1
}
root=
find_root() { for r in ${roots}; do [ -f "$r/${AGENT_RUNTIME_SHIM_FILE}" ] && root=$r && return 0; done; return 1; }
key="$url $sha $size"
if [ "$(cat "$dir/installed" 2>/dev/null)" != "$key" ] || ! find_root; then
  rm -f "$dir/installed"
  n=0 http=
  until download && verify; do
    case "$http" in 408|416|429) ;; 4??) fail "cannot download the agent runtime from $url (HTTP $http)" ;; esac
    n=$((n + 1))
    [ "$n" -ge ${retry.attempts} ] && fail "cannot download the agent runtime from $url (${retry.attempts} tries)"
    sleep ${retry.seconds}
  done
  rm -rf "$dir/package" "$dir/dstack-runtime"
  tar -xzf "$file" -C "$dir" || { rm -f "$file"; fail "cannot unpack the agent runtime from $url"; }
  find_root || fail "$url holds no agent runtime (no ${AGENT_RUNTIME_SHIM_FILE} in ${RUNTIME_ARCHIVE_ROOTS.join(' or ')})"
  # npm and pnpm pack every file 0644.
  chmod 0755 "$root/bin/node" "$root"/lib/* || fail "cannot make the agent runtime executable"
  echo "$key" >"$dir/installed"
  rm -f "$file"
fi
set --
for l in "$root"/lib/ld-*.so*; do [ -f "$l" ] && set -- "$l" --library-path "$root/lib"; done
case "\${1##*/}" in ld-linux*) set -- "$@" --inhibit-cache ;; esac
set -- "$@" "$root/bin/node"
v=$("$@" "$root/${AGENT_RUNTIME_SHIM_FILE}" --version 2>&1) || fail "the agent runtime does not start on this host: $v"
`;
}
