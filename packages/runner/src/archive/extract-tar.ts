/**
 * Unpacks a user's tar archive (the repo's code, a `files:` entry) into a directory, with the
 * same rules whatever `tar` the job's image has: the runner is root and the archive is the
 * user's, so no entry may create, change or link to anything outside the destination.
 *
 * - Entry paths are relative and never climb (`/x`, `a/../../x` are refused).
 * - A hard link points to a regular file this archive already put in the destination: a link
 *   to `/etc/passwd` would make the later chown to the job's user hand that file over.
 * - A symbolic link's target stays inside the destination, also through other links; links
 *   inside a repo (`docs -> ../shared/docs`) keep working.
 * - Nothing is written through a symbolic link: every parent directory is checked with lstat,
 *   files are created with O_EXCL | O_NOFOLLOW, modes are set through the open descriptor.
 * - Modes keep the permission bits only (no setuid, setgid or sticky); owners are not taken
 *   from the archive (the files are the runner's until it hands them over).
 */
import { constants, createReadStream } from 'node:fs';
import {
  type FileHandle,
  link,
  lstat,
  lutimes,
  mkdir,
  open,
  readlink,
  realpath,
  symlink,
  unlink,
} from 'node:fs/promises';
import { join, posix } from 'node:path';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { InvalidArchiveError, readTarEntries, type TarEntry } from './tar-reader.js';

/** An entry the extractor refuses; the message names it. */
export class UnsafeArchiveEntryError extends InvalidArchiveError {
  override readonly name = 'UnsafeArchiveEntryError';
}

/**
 * An archive that unpacks to more than the cap (a gzipped tar of zeros grows a thousandfold).
 * Unpacking stops there; what was written so far stays, for the caller to remove.
 */
export class UnpackedSizeLimitError extends InvalidArchiveError {
  override readonly name = 'UnpackedSizeLimitError';

  constructor(
    readonly limitBytes: number,
    message = `the archive unpacks to more than ${limitBytes} bytes`,
  ) {
    super(message);
  }
}

export interface ExtractTarOptions {
  /**
   * The most bytes the tar stream may have once gunzipped (headers, padding and contents: an
   * archive of many empty files costs its headers); 0 or absent: no limit.
   */
  maxUnpackedBytes?: number;
}

/** Symbolic links followed while checking where one leads, before it counts as a loop. */
const MAX_LINK_HOPS = 40;
/** Parent directories the archive does not list get the mode `tar` gives them. */
const IMPLICIT_DIRECTORY_MODE = 0o755;

interface DirectoryMetadata {
  mode: number;
  mtimeSeconds: number | undefined;
}

/** Unpacks the tar archive at `archivePath` (gzipped or not: its first bytes tell) into `destination`. */
export async function extractTarArchive(
  archivePath: string,
  destination: string,
  options: ExtractTarOptions = {},
): Promise<void> {
  await mkdir(destination, { recursive: true });
  const root = await realpath(destination);
  const gzipped = await startsWithGzipMagic(archivePath);
  const file = createReadStream(archivePath);
  const stream: Readable = gzipped ? file.pipe(createGunzip()) : file;
  if (gzipped) file.once('error', (error) => stream.destroy(error));
  const limit = options.maxUnpackedBytes ?? 0;
  try {
    await new TarExtraction(root).run(readTarEntries(limit > 0 ? capped(stream, limit) : stream));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code?.startsWith('Z_')) {
      throw new InvalidArchiveError(`the archive is not valid gzip: ${(error as Error).message}`);
    }
    throw error;
  } finally {
    stream.destroy();
    file.destroy();
  }
}

/** The chunks of `stream`, failing once they add up to more than `limitBytes` (before that chunk is used). */
async function* capped(stream: AsyncIterable<Buffer>, limitBytes: number): AsyncGenerator<Buffer> {
  let total = 0;
  for await (const chunk of stream) {
    total += chunk.length;
    if (total > limitBytes) throw new UnpackedSizeLimitError(limitBytes);
    yield chunk;
  }
}

class TarExtraction {
  /** Regular files this archive created (relative paths): the only targets a hard link may have. */
  private readonly extractedFiles = new Set<string>();
  private readonly createdSymlinks = new Set<string>();
  /** Modes are set once everything is in (a read-only directory must still take its entries). */
  private readonly directories = new Map<string, DirectoryMetadata>();

  constructor(private readonly root: string) {}

  async run(entries: AsyncIterable<TarEntry>): Promise<void> {
    for await (const entry of entries) {
      const path = safeRelativePath(entry.path, entry.path);
      if (path === '') {
        // `./`: the destination itself, whose mode is the runner's.
        if (entry.kind !== 'directory')
          throw refused(entry.path, `a ${entry.kind} cannot be the destination itself`);
        continue;
      }
      await this.ensureParents(path, entry.path);
      switch (entry.kind) {
        case 'directory':
          await this.makeDirectory(path, entry);
          break;
        case 'file':
          await this.writeFile(path, entry);
          break;
        case 'symlink':
          await this.makeSymlink(path, entry);
          break;
        case 'hardlink':
          await this.makeHardLink(path, entry);
          break;
      }
    }
    // A link's target may pass through links extracted after it: judged once all are in.
    for (const path of this.createdSymlinks) {
      if (!(await this.leadsInside(path))) {
        const target = await readlinkOf(join(this.root, path));
        await unlink(join(this.root, path));
        throw refused(
          path,
          `symbolic link to ${target}: the target is outside the destination (through other links)`,
        );
      }
    }
    await this.applyDirectoryMetadata();
  }

  /** Creates the missing parents of `path`; refuses one that is not a real directory (a link, a file). */
  private async ensureParents(path: string, shown: string): Promise<void> {
    const segments = path.split('/');
    for (let depth = 1; depth < segments.length; depth += 1) {
      const parent = segments.slice(0, depth).join('/');
      const info = await lstatOrUndefined(join(this.root, parent));
      if (info === undefined) {
        await mkdir(join(this.root, parent), { mode: 0o700 });
        this.directories.set(parent, { mode: IMPLICIT_DIRECTORY_MODE, mtimeSeconds: undefined });
      } else if (!info.isDirectory()) {
        throw refused(
          shown,
          info.isSymbolicLink()
            ? `the path passes through the symbolic link ${parent}`
            : `the path passes through ${parent}, which is not a directory`,
        );
      }
    }
  }

  private async makeDirectory(path: string, entry: TarEntry): Promise<void> {
    const absolute = join(this.root, path);
    const info = await lstatOrUndefined(absolute);
    if (info !== undefined && !info.isDirectory()) await this.removeEntry(path);
    if (info === undefined || !info.isDirectory()) await mkdir(absolute, { mode: 0o700 });
    this.directories.set(path, { mode: entry.mode & 0o777, mtimeSeconds: entry.mtimeSeconds });
  }

  private async writeFile(path: string, entry: TarEntry): Promise<void> {
    await this.replaceable(path, entry.path);
    const file = await open(
      join(this.root, path),
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    try {
      for await (const chunk of entry.content) await file.write(chunk);
      await file.chmod(entry.mode & 0o777);
      await file.utimes(entry.mtimeSeconds, entry.mtimeSeconds);
    } finally {
      await file.close();
    }
    this.extractedFiles.add(path);
  }

  private async makeSymlink(path: string, entry: TarEntry): Promise<void> {
    const target = entry.linkTarget;
    if (target === '') throw refused(entry.path, 'symbolic link with an empty target');
    if (posix.isAbsolute(target))
      throw refused(entry.path, `symbolic link to ${target}: the target is absolute`);
    if (posix.normalize(posix.join(posix.dirname(path), target)).split('/')[0] === '..') {
      throw refused(entry.path, `symbolic link to ${target}: the target is outside the destination`);
    }
    await this.replaceable(path, entry.path);
    await symlink(target, join(this.root, path));
    await lutimes(join(this.root, path), entry.mtimeSeconds, entry.mtimeSeconds);
    this.createdSymlinks.add(path);
  }

  private async makeHardLink(path: string, entry: TarEntry): Promise<void> {
    const target = safeRelativePath(
      entry.linkTarget,
      entry.path,
      `hard link to ${entry.linkTarget}: the target`,
    );
    const info = await lstatOrUndefined(join(this.root, target));
    if (!this.extractedFiles.has(target) || info === undefined || !info.isFile()) {
      throw refused(entry.path, `hard link to ${entry.linkTarget}: the target is not a file of this archive`);
    }
    if (target === path) return;
    await this.replaceable(path, entry.path);
    await link(join(this.root, target), join(this.root, path));
    this.extractedFiles.add(path);
  }

  /** Makes room for an entry: what is at its path goes, unless it is a directory. */
  private async replaceable(path: string, shown: string): Promise<void> {
    const info = await lstatOrUndefined(join(this.root, path));
    if (info === undefined) return;
    if (info.isDirectory()) throw refused(shown, 'it would replace a directory');
    await this.removeEntry(path);
  }

  private async removeEntry(path: string): Promise<void> {
    // unlink removes a link itself, never what it points to.
    await unlink(join(this.root, path));
    this.extractedFiles.delete(path);
    this.createdSymlinks.delete(path);
  }

  /**
   * Whether the symbolic link at `path` resolves inside the destination: its target followed
   * component by component, through the links it meets. A missing component ends the walk
   * (nothing beyond it exists to lead elsewhere); a loop leads nowhere, so not outside either.
   */
  private async leadsInside(path: string): Promise<boolean> {
    const resolved = posix
      .dirname(path)
      .split('/')
      .filter((segment) => segment !== '.');
    const pending = (await readlinkOf(join(this.root, path))).split('/');
    let hops = 0;
    for (let segment = pending.shift(); segment !== undefined; segment = pending.shift()) {
      if (segment === '' || segment === '.') continue;
      if (segment === '..') {
        if (resolved.pop() === undefined) return false;
        continue;
      }
      const candidate = join(this.root, ...resolved, segment);
      const info = await lstatOrUndefined(candidate);
      if (info?.isSymbolicLink()) {
        hops += 1;
        if (hops > MAX_LINK_HOPS) return true;
        const target = await readlinkOf(candidate);
        if (posix.isAbsolute(target)) return false;
        pending.unshift(...target.split('/'));
        continue;
      }
      resolved.push(segment);
      if (info === undefined || !info.isDirectory()) {
        // The rest is spelled, not resolved: it can only climb back over what it names.
        return posix.normalize(posix.join(...resolved, ...pending)).split('/')[0] !== '..';
      }
    }
    return true;
  }

  /** Deepest first, so a directory's time is set after its entries stop changing it. */
  private async applyDirectoryMetadata(): Promise<void> {
    const paths = [...this.directories.keys()].sort(
      (left, right) => right.split('/').length - left.split('/').length,
    );
    for (const path of paths) {
      const metadata = this.directories.get(path) as DirectoryMetadata;
      let directory: FileHandle;
      try {
        directory = await open(
          join(this.root, path),
          constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW,
        );
      } catch (error) {
        // Replaced by a later entry (a file or a link where a directory was): nothing to set.
        if (['ENOENT', 'ENOTDIR', 'ELOOP'].includes((error as NodeJS.ErrnoException).code ?? '')) continue;
        throw error;
      }
      try {
        await directory.chmod(metadata.mode);
        if (metadata.mtimeSeconds !== undefined) {
          await directory.utimes(metadata.mtimeSeconds, metadata.mtimeSeconds);
        }
      } finally {
        await directory.close();
      }
    }
  }
}

/**
 * `path` without `./` and trailing slashes, relative to the destination ('' for the
 * destination itself). Refuses absolute paths and `..` segments, which GNU tar strips and
 * busybox follows. `what` names the path in the message (the entry's own, or a link's target).
 */
function safeRelativePath(path: string, shown: string, what = 'the path'): string {
  if (path.includes('\0')) throw refused(shown, `${what} holds a NUL byte`);
  if (posix.isAbsolute(path)) throw refused(shown, `${what} is absolute`);
  const segments = path.split('/').filter((segment) => segment !== '' && segment !== '.');
  if (segments.includes('..')) throw refused(shown, `${what} climbs out with ..`);
  return segments.join('/');
}

function refused(entry: string, reason: string): UnsafeArchiveEntryError {
  return new UnsafeArchiveEntryError(`tar archive entry ${JSON.stringify(entry)} refused: ${reason}`);
}

async function lstatOrUndefined(path: string) {
  try {
    return await lstat(path);
  } catch (error) {
    if (['ENOENT', 'ENOTDIR'].includes((error as NodeJS.ErrnoException).code ?? '')) return undefined;
    throw error;
  }
}

function readlinkOf(path: string): Promise<string> {
  return readlink(path, 'utf8');
}

async function startsWithGzipMagic(path: string): Promise<boolean> {
  const file = await open(path, 'r');
  try {
    const head = Buffer.alloc(2);
    const { bytesRead } = await file.read(head, 0, 2, 0);
    return bytesRead === 2 && head[0] === 0x1f && head[1] === 0x8b;
  } finally {
    await file.close();
  }
}
