import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, readdir, rename, rm } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { PortableRuntime } from './portable-runtime.js';

/** The directory a runtime archive unpacks into. */
export const RUNTIME_ARCHIVE_ROOT = 'dstack-runtime';

const BLOCK = 512;

/**
 * Writes the runtime as a gzipped tar (`dstack-runtime/bin/node`, …) to `outputPath`, for hosts
 * that fetch it rather than have it mounted: `tar -xzf` (busybox's included) unpacks it. The
 * archive is reproducible: entries sorted, owned by root, dated 0. Written next to `outputPath`
 * and renamed, so a reader never sees half an archive.
 */
export async function writePortableRuntimeArchive(
  runtime: PortableRuntime,
  outputPath: string,
): Promise<void> {
  const partial = `${outputPath}.partial-${process.pid}`;
  try {
    await pipeline(
      Readable.from(tarEntries(runtime.directory, RUNTIME_ARCHIVE_ROOT)),
      createGzip(),
      createWriteStream(partial, { mode: 0o644 }),
    );
    await rename(partial, outputPath);
  } finally {
    await rm(partial, { force: true });
  }
}

/** The tar stream (ustar) of `directory` under `root`: directories and regular files only. */
async function* tarEntries(directory: string, root: string): AsyncGenerator<Buffer> {
  yield header(`${root}/`, 0o755, 0, '5');
  for (const relative of await listTree(directory)) {
    const path = join(directory, relative);
    const info = await lstat(path);
    const name = posix.join(root, relative);
    if (info.isDirectory()) {
      yield header(`${name}/`, info.mode & 0o777, 0, '5');
    } else if (info.isFile()) {
      yield header(name, info.mode & 0o777, info.size, '0');
      let written = 0;
      for await (const chunk of createReadStream(path)) {
        written += (chunk as Buffer).length;
        yield chunk as Buffer;
      }
      if (written !== info.size) throw new Error(`${path} changed while it was archived`);
      const padding = (BLOCK - (info.size % BLOCK)) % BLOCK;
      if (padding > 0) yield Buffer.alloc(padding);
    } else {
      throw new Error(`${path} is neither a file nor a directory; a runtime holds only those`);
    }
  }
  // The end of the archive: two empty blocks.
  yield Buffer.alloc(2 * BLOCK);
}

/** Every path under `directory`, relative to it, sorted, a directory before what it holds. */
async function listTree(directory: string, prefix = ''): Promise<string[]> {
  const paths: string[] = [];
  const entries = await readdir(join(directory, prefix), { withFileTypes: true });
  entries.sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0));
  for (const entry of entries) {
    const relative = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    paths.push(relative);
    if (entry.isDirectory()) paths.push(...(await listTree(directory, relative)));
  }
  return paths;
}

/** A ustar header block; names longer than 100 bytes go to the 155-byte prefix field. */
function header(name: string, mode: number, size: number, type: '0' | '5'): Buffer {
  const block = Buffer.alloc(BLOCK);
  const [prefix, base] = splitName(name);
  block.write(base, 0, 100, 'utf8');
  writeOctal(block, mode, 100, 8);
  writeOctal(block, 0, 108, 8); // uid
  writeOctal(block, 0, 116, 8); // gid
  writeOctal(block, size, 124, 12);
  writeOctal(block, 0, 136, 12); // mtime
  block.fill(' ', 148, 156); // the checksum counts its own field as spaces
  block.write(type, 156, 1, 'ascii');
  block.write('ustar\u000000', 257, 8, 'ascii');
  block.write('root', 265, 32, 'ascii');
  block.write('root', 297, 32, 'ascii');
  block.write(prefix, 345, 155, 'utf8');
  let checksum = 0;
  for (const byte of block) checksum += byte;
  block.write(`${checksum.toString(8).padStart(6, '0')}\u0000 `, 148, 8, 'ascii');
  return block;
}

function splitName(name: string): [string, string] {
  if (Buffer.byteLength(name) <= 100) return ['', name];
  const cut = name.lastIndexOf('/', name.length - 2);
  const prefix = name.slice(0, cut);
  const base = name.slice(cut + 1);
  if (cut <= 0 || Buffer.byteLength(prefix) > 155 || Buffer.byteLength(base) > 100) {
    throw new Error(`${name} is too long for a tar header`);
  }
  return [prefix, base];
}

function writeOctal(block: Buffer, value: number, offset: number, length: number): void {
  const digits = value.toString(8);
  if (digits.length > length - 1) throw new Error(`${value} does not fit a tar header field`);
  block.write(`${digits.padStart(length - 1, '0')}\u0000`, offset, length, 'ascii');
}
