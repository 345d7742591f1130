/**
 * The sha256 and size of the agent runtime a server hands its VMs (`DSTACK_SHIM_DOWNLOAD_URL`),
 * which the VM bootstrap checks before it unpacks the download. The server learns them by reading
 * the URL once itself, at the first launch that needs them, and keeps them for its life: the URL
 * must name one immutable artifact (a versioned tarball; serve a new one at a new URL). Without
 * the setting hosts take the release's npm tarball over HTTPS, unverified by digest: npm's
 * metadata gives sha512 integrity, not the sha256 the host checks, and a server should not
 * download the registry's 45 MB at every start to learn it.
 *
 * When the server cannot read the URL it says so and hands out the URL without a digest (the
 * host may still reach it where the server does not); it tries again after a minute.
 */
import { createHash } from 'node:crypto';

export interface AgentDownloadDigest {
  sha256: string;
  size: number;
}

/** How long a failed read is remembered before the next launch reads the URL again. */
const FAILURE_RETRY_MS = 60_000;
/** How long one read of the URL may take. */
const READ_TIMEOUT_MS = 120_000;

const known = new Map<string, Promise<AgentDownloadDigest | null>>();

/** The digest of what `url` serves, read once per server process (null when it cannot be read). */
export function agentDownloadDigest(url: string): Promise<AgentDownloadDigest | null> {
  let digest = known.get(url);
  if (digest === undefined) {
    digest = readDigest(url).catch((error: unknown) => {
      console.warn(
        `[agents] cannot read ${url} to learn its sha256 (DSTACK_SHIM_DOWNLOAD_URL): ${(error as Error).message}; hosts will not verify the download`,
      );
      setTimeout(() => known.delete(url), FAILURE_RETRY_MS).unref();
      return null;
    });
    known.set(url, digest);
  }
  return digest;
}

async function readDigest(url: string): Promise<AgentDownloadDigest> {
  const response = await fetch(url, { signal: AbortSignal.timeout(READ_TIMEOUT_MS) });
  if (!response.ok || response.body === null) throw new Error(`HTTP ${response.status}`);
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of response.body) {
    hash.update(chunk);
    size += chunk.length;
  }
  if (size === 0) throw new Error('it is empty');
  return { sha256: hash.digest('hex'), size };
}
