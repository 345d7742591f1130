/**
 * A tar archive of regular files, the input `docker cp - CONTAINER:/` takes: how the instance's
 * user data gets into a created container before it starts, owned by root with exact modes
 * (a host directory copied in would carry this machine's owners, and a bind mount would need a
 * daemon on this machine).
 */

const BLOCK_SIZE = 512;

export interface TarFile {
  /** Path inside the archive, relative (no leading `/`), at most 100 bytes. */
  readonly path: string;
  readonly content: Buffer;
  /** Permission bits, e.g. 0o600. */
  readonly mode: number;
}

function writeOctal(header: Buffer, offset: number, width: number, value: number): void {
  // Zero-padded octal, then NUL, filling the field as GNU tar and Docker expect.
  header.write(`${value.toString(8).padStart(width - 1, '0')}\0`, offset, width, 'ascii');
}

function fileHeader(file: TarFile): Buffer {
  const name = Buffer.from(file.path, 'utf8');
  if (file.path.startsWith('/') || name.length === 0 || name.length > 100) {
    throw new Error(`tar entry path must be relative and at most 100 bytes: ${file.path}`);
  }
  const header = Buffer.alloc(BLOCK_SIZE);
  name.copy(header, 0);
  writeOctal(header, 100, 8, file.mode & 0o7777);
  writeOctal(header, 108, 8, 0); // uid root
  writeOctal(header, 116, 8, 0); // gid root
  writeOctal(header, 124, 12, file.content.length);
  writeOctal(header, 136, 12, Math.floor(Date.now() / 1000));
  header.write('        ', 148, 8, 'ascii'); // the checksum counts its own field as spaces
  header.write('0', 156, 1, 'ascii'); // regular file
  header.write('ustar\0', 257, 6, 'ascii');
  header.write('00', 263, 2, 'ascii');
  header.write('root', 265, 32, 'ascii');
  header.write('root', 297, 32, 'ascii');
  let checksum = 0;
  for (const byte of header) checksum += byte;
  header.write(`${checksum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii');
  return header;
}

export function tarArchive(files: readonly TarFile[]): Buffer {
  const parts: Buffer[] = [];
  for (const file of files) {
    parts.push(fileHeader(file), file.content);
    const padding = (BLOCK_SIZE - (file.content.length % BLOCK_SIZE)) % BLOCK_SIZE;
    if (padding > 0) parts.push(Buffer.alloc(padding));
  }
  // The end of an archive: two zero blocks.
  parts.push(Buffer.alloc(2 * BLOCK_SIZE));
  return Buffer.concat(parts);
}
