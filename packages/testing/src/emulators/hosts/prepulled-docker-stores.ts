/**
 * The Docker stores of hosts booted from dstack's own VM images (the `dstack` host kind), whose
 * image holds dstack's base image pre-pulled in /var/lib/docker.
 *
 * A host's daemon cannot keep its store on the container's own overlay (overlay2 does not stack
 * on overlay), so /var/lib/docker is mounted from outside. Filled by Docker from the image (a new
 * volume), the copy of the 220 MB store took 4-9 s per host on this machine. Instead, the store is
 * unpacked from the image once per machine (the "original", keyed by the image's id), and each
 * host gets a directory of its own made from it in a fraction of a second: the layers' files as
 * hard links (overlayfs only reads a lower layer: a container's writes go to its own upper
 * directory), everything else (the daemon's databases, written in place) as real copies.
 *
 * Layout under DSTACK_TEST_CACHE (default /var/cache/dstack-test)/emulated-host-stores:
 * `originals/<image id>/docker`, and `hosts/<pid>/<session>/<container>` for the hosts of a
 * process; a process that died leaves its directory to the next sweep (`removeOrphanedStores`).
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { rm, rmdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { isProcessAlive, runDocker } from './docker-cli.js';

const run = promisify(execFile);
const STORE_COMMAND_TIMEOUT_MS = 300_000;

/** Where the original stores and the hosts' stores are. */
export function prepulledStoresRoot(): string {
  return join(process.env.DSTACK_TEST_CACHE ?? '/var/cache/dstack-test', 'emulated-host-stores');
}

const originals = new Map<string, Promise<string>>();

/** The original store of `image` on this machine, unpacked on first use. */
function originalStore(image: string): Promise<string> {
  let original = originals.get(image);
  if (original === undefined) {
    original = unpackOriginal(image);
    original.catch(() => originals.delete(image));
    originals.set(image, original);
  }
  return original;
}

async function unpackOriginal(image: string): Promise<string> {
  const id = (await runDocker(['image', 'inspect', '--format', '{{.Id}}', image]))
    .trim()
    .replace(/^sha256:/, '');
  const target = join(prepulledStoresRoot(), 'originals', id.slice(0, 24));
  const store = join(target, 'docker');
  if (existsSync(store)) return store;
  // Unpacked aside and renamed into place: processes that unpack at once each keep the first.
  const scratch = join(prepulledStoresRoot(), 'originals', `.unpacking-${process.pid}-${randomUUID()}`);
  mkdirSync(scratch, { recursive: true });
  const container = (await runDocker(['create', image])).trim();
  try {
    await run(
      'sh',
      [
        '-c',
        'docker cp "$1:/var/lib/docker" - | tar -x --numeric-owner -C "$2"',
        'unpack',
        container,
        scratch,
      ],
      { timeout: STORE_COMMAND_TIMEOUT_MS },
    );
    try {
      renameSync(scratch, target);
    } catch (error) {
      if (!existsSync(store)) throw error;
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    await runDocker(['rm', '--force', container]).catch(() => undefined);
  }
  return store;
}

/**
 * A new store for one host of `image`, at a directory named after its container within
 * `session`: the directory to mount at the host's /var/lib/docker.
 */
export async function prepulledStoreFor(
  image: string,
  session: string,
  containerName: string,
): Promise<string> {
  const original = await originalStore(image);
  const store = join(sessionDirectory(session), containerName);
  await rm(store, { recursive: true, force: true });
  mkdirSync(store, { recursive: true });
  const script = [
    'set -e',
    // Everything but the layers' files, copied.
    `tar -C "$1" --exclude='./overlay2/*/diff' -cf - . | tar -x --numeric-owner -C "$2"`,
    // The layers' files, linked.
    'for diff in "$1"/overlay2/*/diff; do',
    '  [ -d "$diff" ] || continue',
    '  cp -al "$diff" "$2/overlay2/$(basename "$(dirname "$diff")")/"',
    'done',
  ].join('\n');
  await run('sh', ['-c', script, 'copy', original, store], { timeout: STORE_COMMAND_TIMEOUT_MS });
  return store;
}

/** Removes the store of a host that no longer exists (nothing when it has none). */
export async function removePrepulledStore(session: string, containerName: string): Promise<void> {
  await rm(join(sessionDirectory(session), containerName), { recursive: true, force: true });
}

/** Removes every store of `session` (its emulator closed). */
export async function removeSessionStores(session: string): Promise<void> {
  await rm(sessionDirectory(session), { recursive: true, force: true });
  // The process's directory goes with its last session.
  await rmdir(dirname(sessionDirectory(session))).catch(() => undefined);
}

/** Removes the stores of processes that died without closing their emulators. */
export async function removeOrphanedStores(): Promise<void> {
  const hosts = join(prepulledStoresRoot(), 'hosts');
  if (!existsSync(hosts)) return;
  const orphans = readdirSync(hosts).filter((entry) => {
    const pid = Number(entry);
    return Number.isInteger(pid) && pid !== process.pid && !isProcessAlive(pid);
  });
  await Promise.all(orphans.map((entry) => rm(join(hosts, entry), { recursive: true, force: true })));
}

function sessionDirectory(session: string): string {
  return join(prepulledStoresRoot(), 'hosts', String(process.pid), session);
}
