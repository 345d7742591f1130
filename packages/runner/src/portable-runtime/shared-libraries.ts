import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** A shared library a program loads: the name it asks for (its soname) and the file it gets on this host. */
export interface SharedLibrary {
  name: string;
  path: string;
}

/**
 * Every shared library `binaryPath` loads on this host, as its own dynamic loader resolves them
 * (`<loader> --list <binary>`, which is what `ldd` runs; glibc's and musl's loaders both accept
 * it). The loader itself is not in the list.
 */
export async function listSharedLibraries(binaryPath: string, loaderPath: string): Promise<SharedLibrary[]> {
  // The host's LD_LIBRARY_PATH stays: it is how this host's node finds its libraries. A preload
  // would be listed as if the binary needed it, so it goes.
  const { LD_PRELOAD: _preload, LD_AUDIT: _audit, ...environment } = process.env;
  let stdout: string;
  try {
    ({ stdout } = await execFileAsync(loaderPath, ['--list', binaryPath], {
      env: environment,
      maxBuffer: 1024 * 1024,
    }));
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(
      `cannot list the shared libraries of ${binaryPath} with ${loaderPath}: ${stderr || (error as Error).message}`,
    );
  }
  return parseLoaderListing(stdout, binaryPath);
}

/**
 * Parses `--list` output: `name => /path (0x…)` lines are libraries; `name => not found` is an
 * error; lines without `=>` are the loader itself and the kernel's vDSO.
 */
export function parseLoaderListing(listing: string, binaryPath: string): SharedLibrary[] {
  const libraries: SharedLibrary[] = [];
  for (const line of listing.split('\n')) {
    const match = /^\s*(\S+) => (.*?)(?: \(0x[0-9a-f]+\))?\s*$/.exec(line);
    if (match === null) continue;
    const [, name = '', resolved = ''] = match;
    if (resolved === 'not found') {
      throw new Error(`${binaryPath} needs ${name}, which its loader does not find on this host`);
    }
    if (name.includes('/')) {
      // A library named by path is looked up at that path in the image, never in the runtime's.
      throw new Error(
        `${binaryPath} names the library ${name} by path; it cannot be carried into another image`,
      );
    }
    if (!resolved.startsWith('/')) continue;
    libraries.push({ name, path: resolved });
  }
  return libraries;
}
