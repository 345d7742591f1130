/**
 * The entrypoint every container backend gives the job's container (dstack's
 * `get_docker_commands`): a POSIX `sh` script that downloads the runner's portable runtime (a
 * `.tar.gz` of node with its own loader and libraries plus the runner bundle, as
 * `@dstack/runner`'s `writePortableRuntimeArchive` writes it), unpacks it and execs the runner
 * through the runtime's loader. It needs only `sh`, `tar` with gzip, `mkdir` and curl or wget, so
 * it starts in glibc, musl and bare busybox images alike; nothing of the image's libc is used.
 *
 * The runner listens for HTTP on loopback (10999) and for SSH on 10022, which the container
 * backend publishes: the server logs in there with the project key and forwards the HTTP port,
 * as dstack reaches its runner's sshd on container backends.
 */
import { DSTACK_RUNNER_HTTP_PORT, DSTACK_RUNNER_SSH_PORT } from '../agent-protocol/ports.js';
import { shellQuote } from './shell-quote.js';

/** Where the entrypoint unpacks the runtime (`<dir>/dstack-runtime/...`). */
export const CONTAINER_RUNTIME_DIRECTORY = '/tmp/dstack';
/** The runner's home in the container (the repo goes to `<home>/workflow`). */
export const CONTAINER_RUNNER_HOME = '/root/.dstack/runner';
/** The top directory of the runtime archive (`RUNTIME_ARCHIVE_ROOT` of `@dstack/runner`). */
export const RUNTIME_ARCHIVE_ROOT_DIRECTORY = 'dstack-runtime';
/** Download attempts before the entrypoint gives up (5 s apart). */
export const RUNTIME_DOWNLOAD_ATTEMPTS = 30;

export interface ContainerEntrypointOptions {
  /** The runtime archive's URL (a `.tar.gz` whose top directory is `dstack-runtime/`). Required. */
  runtimeDownloadUrl: string;
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
  if (!/^https?:\/\//.test(options.runtimeDownloadUrl)) {
    throw new Error(
      `runtimeDownloadUrl: expected an http(s) URL of the runner runtime archive, got "${options.runtimeDownloadUrl}"`,
    );
  }
  const keys = options.sshAuthorizedKeys
    .map((key) => key.trim())
    .filter((key) => key !== '')
    .map((key) => ` --ssh-authorized-key ${shellQuote(key)}`)
    .join('');
  const jobUser = options.jobUser ? ` --job-user ${shellQuote(options.jobUser)}` : '';
  const root = `$dir/${RUNTIME_ARCHIVE_ROOT_DIRECTORY}`;
  return `set -u
url=${shellQuote(options.runtimeDownloadUrl)}
dir=${CONTAINER_RUNTIME_DIRECTORY}
mkdir -p "$dir" ${CONTAINER_RUNNER_HOME}
fetch() {
  if command -v curl >/dev/null 2>&1; then curl -fsSL -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then wget -q -O "$2" "$1"
  else echo "dstack: neither curl nor wget in this image" >&2; exit 1
  fi
}
tries=0
until fetch "$url" "$dir/runtime.tar.gz" && tar -xzf "$dir/runtime.tar.gz" -C "$dir" && [ -f "${root}/runner.mjs" ]; do
  tries=$((tries + 1))
  if [ "$tries" -ge ${RUNTIME_DOWNLOAD_ATTEMPTS} ]; then echo "dstack: cannot download the runner from $url" >&2; exit 1; fi
  sleep 5
done
rm -f "$dir/runtime.tar.gz"
loader=
for candidate in "${root}"/lib/ld-*.so*; do [ -f "$candidate" ] && loader="$candidate"; done
set --
if [ -n "$loader" ]; then
  case "\${loader##*/}" in
    ld-linux*) set -- "$loader" --library-path "${root}/lib" --inhibit-cache ;;
    *) set -- "$loader" --library-path "${root}/lib" ;;
  esac
fi
exec "$@" "${root}/bin/node" "${root}/runner.mjs" start --home ${CONTAINER_RUNNER_HOME} --http-port ${DSTACK_RUNNER_HTTP_PORT} --ssh-port ${DSTACK_RUNNER_SSH_PORT}${jobUser}${keys}
`;
}
