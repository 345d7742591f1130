/**
 * The entrypoint every container backend gives the job's container (dstack's
 * `get_docker_commands`): a POSIX `sh` script that downloads the runner's portable runtime (node
 * with its own loader and libraries plus the runner bundle), unpacks it and execs the runner
 * through the runtime's loader. It needs only `sh`, `tar` with gzip, `mkdir` and curl or wget, so
 * it starts in glibc, musl and bare busybox images alike; nothing of the image's libc is used.
 *
 * The runtime comes by default from the npm tarball of `@dstack/runner-runtime-linux-x64` at this
 * release's version, or from any URL of an archive `@dstack/runner`'s `writePortableRuntimeArchive`
 * wrote (a server's `DSTACK_RUNNER_DOWNLOAD_URL`): the script finds the runtime in either layout.
 *
 * The runner listens for HTTP on loopback (10999) and for SSH on 10022, which the container
 * backend publishes: the server logs in there with the project key and forwards the HTTP port,
 * as dstack reaches its runner's sshd on container backends.
 */
import { DSTACK_RUNNER_HTTP_PORT, DSTACK_RUNNER_SSH_PORT } from '../agent-protocol/ports.js';
import { VERSION } from '../version.js';
import { shellQuote } from './shell-quote.js';

/** Where the entrypoint unpacks the runtime. */
export const CONTAINER_RUNTIME_DIRECTORY = '/tmp/dstack';
/** The runner's home in the container (the repo goes to `<home>/workflow`). */
export const CONTAINER_RUNNER_HOME = '/root/.dstack/runner';
/**
 * Where the runtime sits in the archives the entrypoint takes, relative to where they are
 * unpacked: a `writePortableRuntimeArchive` archive (`RUNTIME_ARCHIVE_ROOT` of `@dstack/runner`),
 * and the npm tarball of `@dstack/runner-runtime-linux-x64` (npm puts a package under `package/`).
 */
export const RUNTIME_ARCHIVE_ROOTS = ['dstack-runtime', 'package/dist/dstack-runtime'] as const;
/** Download attempts before the entrypoint gives up (5 s apart). */
export const RUNTIME_DOWNLOAD_ATTEMPTS = 30;

/**
 * The npm registry tarball of `@dstack/runner-runtime-linux-x64` at `version`: the default
 * download location (Vast.ai, the one container cloud so far, rents x86_64 machines only).
 */
export function runnerRuntimeTarballUrl(version: string = VERSION): string {
  return `https://registry.npmjs.org/@dstack/runner-runtime-linux-x64/-/runner-runtime-linux-x64-${version}.tgz`;
}

export interface ContainerEntrypointOptions {
  /** The runtime archive's URL. Default: `runnerRuntimeTarballUrl()`. */
  runtimeDownloadUrl?: string | null;
  /** Public keys that may log in to the runner's SSH port before a job is submitted: the project key. */
  sshAuthorizedKeys: readonly string[];
  /** Who the job runs as when its spec names no `user` (`--job-user`). Default: root. */
  jobUser?: string | null;
}

/**
 * The script (for `sh -c`). The loader is found in the runtime's `lib/` by its name
 * (`ld-linux-*` for glibc gets `--inhibit-cache`, as `loaderArguments` of `@dstack/runner`),
 * so the script needs no JSON parser for the runtime's manifest.
 */
export function buildContainerEntrypoint(options: ContainerEntrypointOptions): string {
  const downloadUrl = options.runtimeDownloadUrl ?? runnerRuntimeTarballUrl();
  if (!/^https?:\/\//.test(downloadUrl)) {
    throw new Error(
      `runtimeDownloadUrl: expected an http(s) URL of the runner runtime archive, got "${downloadUrl}"`,
    );
  }
  const keys = options.sshAuthorizedKeys
    .map((key) => key.trim())
    .filter((key) => key !== '')
    .map((key) => ` --ssh-authorized-key ${shellQuote(key)}`)
    .join('');
  const jobUser = options.jobUser ? ` --job-user ${shellQuote(options.jobUser)}` : '';
  const roots = RUNTIME_ARCHIVE_ROOTS.map((root) => `"$dir/${root}"`).join(' ');
  return `set -u
url=${shellQuote(downloadUrl)}
dir=${CONTAINER_RUNTIME_DIRECTORY}
mkdir -p "$dir" ${CONTAINER_RUNNER_HOME}
# As the container's PID 1 the shell ignores SIGTERM unless it traps it, and a trap runs only
# once the foreground command ends: the slow steps run in the background and the shell waits,
# which the trapped signal interrupts at once, so a stop during the download takes no grace period.
child=
stopped() { [ -z "$child" ] || kill "$child" 2>/dev/null; echo "dstack: stopped before the runner started" >&2; exit 143; }
trap stopped TERM INT HUP
interruptible() { "$@" & child=$!; wait "$child"; status=$?; child=; return "$status"; }
if command -v curl >/dev/null 2>&1; then fetch() { curl -fsSL -o "$2" "$1"; }
elif command -v wget >/dev/null 2>&1; then fetch() { wget -q -O "$2" "$1"; }
else echo "dstack: neither curl nor wget in this image" >&2; exit 1
fi
unpacked_root() {
  for candidate in ${roots}; do
    if [ -f "$candidate/runner.mjs" ]; then root="$candidate"; return 0; fi
  done
  return 1
}
tries=0
until interruptible fetch "$url" "$dir/runtime.tar.gz" && interruptible tar -xzf "$dir/runtime.tar.gz" -C "$dir" && unpacked_root; do
  tries=$((tries + 1))
  if [ "$tries" -ge ${RUNTIME_DOWNLOAD_ATTEMPTS} ]; then echo "dstack: cannot download the runner from $url" >&2; exit 1; fi
  interruptible sleep 5
done
rm -f "$dir/runtime.tar.gz"
# npm and pnpm pack every file 0644: the runtime package arrives without its execute bits.
chmod 0755 "$root/bin/node" "$root"/lib/* || { echo "dstack: cannot make the runner runtime executable" >&2; exit 1; }
loader=
for candidate in "$root"/lib/ld-*.so*; do [ -f "$candidate" ] && loader="$candidate"; done
set --
if [ -n "$loader" ]; then
  case "\${loader##*/}" in
    ld-linux*) set -- "$loader" --library-path "$root/lib" --inhibit-cache ;;
    *) set -- "$loader" --library-path "$root/lib" ;;
  esac
fi
exec "$@" "$root/bin/node" "$root/runner.mjs" start --home ${CONTAINER_RUNNER_HOME} --http-port ${DSTACK_RUNNER_HTTP_PORT} --ssh-port ${DSTACK_RUNNER_SSH_PORT}${jobUser}${keys}
`;
}
