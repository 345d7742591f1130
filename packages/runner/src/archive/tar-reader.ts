/**
 * Reads a tar stream entry by entry: POSIX ustar (with the name prefix), pax extended headers
 * (`path`, `linkpath`, `size`, `mtime`), GNU long names (`L`, `K`) and base-256 numbers, the old
 * GNU and v7 headers. It only parses: what an entry may do to the file system is the
 * extractor's decision (`extract-tar.ts`).
 */

const BLOCK = 512;
/** Pax and GNU long-name headers are read into memory: a bound keeps a crafted one from exhausting it. */
const MAX_METADATA_BYTES = 1024 * 1024;

export type TarEntryKind = 'file' | 'directory' | 'symlink' | 'hardlink';

export interface TarEntry {
  kind: TarEntryKind;
  /** The path as the archive spells it (pax `path`, GNU long name or ustar prefix applied). */
  path: string;
  /** Symbolic and hard links: what they point to, as the archive spells it. */
  linkTarget: string;
  /** The mode bits of the header, setuid and all: the extractor decides what it keeps. */
  mode: number;
  mtimeSeconds: number;
  /** The bytes of a regular file (empty for other kinds), read as they arrive. */
  content: AsyncIterable<Buffer>;
}

/** An archive the runner will not unpack: not a tar (or gzipped tar), cut short, or unsafe. */
export class InvalidArchiveError extends Error {
  override readonly name: string = 'InvalidArchiveError';
}

/** A stream that is not a tar archive, or one cut short. */
export class TarFormatError extends InvalidArchiveError {
  override readonly name = 'TarFormatError';
}

/** Exactly-sized reads over a stream of chunks. */
class ChunkReader {
  private readonly buffered: Buffer[] = [];
  private bufferedBytes = 0;
  private ended = false;
  /** Bytes consumed so far, for messages that say where an archive is broken. */
  offset = 0;

  constructor(private readonly chunks: AsyncIterator<Buffer>) {}

  /** Exactly `size` bytes, or undefined at the end of the stream (a partial read is an error). */
  async take(size: number): Promise<Buffer | undefined> {
    while (this.bufferedBytes < size && !this.ended) await this.pull();
    if (this.bufferedBytes === 0 && size > 0) return undefined;
    if (this.bufferedBytes < size)
      throw new TarFormatError(`the tar archive ends early, at byte ${this.offset}`);
    const parts: Buffer[] = [];
    for await (const piece of this.stream(size)) parts.push(piece);
    return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
  }

  /** `size` bytes as they arrive, in chunks. */
  async *stream(size: number): AsyncGenerator<Buffer> {
    let left = size;
    while (left > 0) {
      if (this.bufferedBytes === 0) {
        if (this.ended) throw new TarFormatError(`the tar archive ends early, at byte ${this.offset}`);
        await this.pull();
        continue;
      }
      const chunk = this.buffered[0] as Buffer;
      const piece = chunk.length <= left ? chunk : chunk.subarray(0, left);
      if (piece === chunk) this.buffered.shift();
      else this.buffered[0] = chunk.subarray(left);
      this.bufferedBytes -= piece.length;
      this.offset += piece.length;
      left -= piece.length;
      yield piece;
    }
  }

  async skip(size: number): Promise<void> {
    for await (const _ of this.stream(size)) {
      // Discarded.
    }
  }

  private async pull(): Promise<void> {
    const next = await this.chunks.next();
    if (next.done) {
      this.ended = true;
      return;
    }
    const chunk = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value);
    this.buffered.push(chunk);
    this.bufferedBytes += chunk.length;
  }
}

interface RawHeader {
  type: string;
  name: string;
  linkname: string;
  mode: number;
  size: number;
  mtimeSeconds: number;
}

/** Overrides from the pax or GNU headers before an entry, for that entry only. */
interface PendingOverrides {
  path?: string;
  linkTarget?: string;
  size?: number;
  mtimeSeconds?: number;
}

/**
 * The entries of a tar stream, in order. Each entry's `content` must be read (or left) before
 * the next is asked for: the rest of it is skipped then.
 */
export async function* readTarEntries(chunks: AsyncIterable<Buffer>): AsyncGenerator<TarEntry> {
  const reader = new ChunkReader(chunks[Symbol.asyncIterator]());
  let overrides: PendingOverrides = {};
  for (;;) {
    const headerOffset = reader.offset;
    const block = await reader.take(BLOCK);
    // The end: two zero blocks, or (as some writers leave it) none at all.
    if (block === undefined || isZeroBlock(block)) return;
    const header = parseHeader(block, headerOffset);
    const isMetadata = ['x', 'g', 'L', 'K'].includes(header.type);
    const size = isMetadata ? header.size : (overrides.size ?? header.size);
    const padded = size + ((BLOCK - (size % BLOCK)) % BLOCK);
    if (isMetadata) {
      if (size > MAX_METADATA_BYTES) {
        throw new TarFormatError(`tar header at byte ${headerOffset} announces ${size} bytes of metadata`);
      }
      const data = (await reader.take(padded))?.subarray(0, size) ?? Buffer.alloc(0);
      if (header.type === 'x') overrides = { ...overrides, ...parsePax(data, headerOffset) };
      else if (header.type === 'L') overrides.path = nulTerminated(data);
      else if (header.type === 'K') overrides.linkTarget = nulTerminated(data);
      // 'g': global pax headers carry comments (git archive's commit id); nothing an extractor uses.
      continue;
    }
    const path = overrides.path ?? header.name;
    const kind = entryKind(header.type, path, headerOffset);
    const entry = {
      path,
      linkTarget: overrides.linkTarget ?? header.linkname,
      mode: header.mode,
      mtimeSeconds: overrides.mtimeSeconds ?? header.mtimeSeconds,
    };
    overrides = {};
    if (kind === undefined) {
      // A GNU volume label names the archive, not a file.
      await reader.skip(padded);
      continue;
    }
    // POSIX: links and directories store no data whatever their size field says (Python's
    // tarfile reads them so too); a GNU dump directory stores its listing, which is skipped.
    const dataSize = kind === 'file' ? size : 0;
    const dataPadded = kind === 'file' || header.type === 'D' ? padded : 0;
    const start = reader.offset;
    yield { kind, ...entry, content: reader.stream(dataSize) };
    await reader.skip(start + dataPadded - reader.offset);
  }
}

function isZeroBlock(block: Buffer): boolean {
  for (const byte of block) if (byte !== 0) return false;
  return true;
}

function parseHeader(block: Buffer, offset: number): RawHeader {
  const recorded = parseNumber(block.subarray(148, 156));
  let unsigned = 0;
  let signed = 0;
  for (let index = 0; index < BLOCK; index += 1) {
    const byte = index >= 148 && index < 156 ? 0x20 : (block[index] as number);
    unsigned += byte;
    signed += byte > 127 ? byte - 256 : byte;
  }
  if (recorded !== unsigned && recorded !== signed) {
    throw new TarFormatError(`not a tar archive: bad header checksum at byte ${offset}`);
  }
  const magic = block.toString('latin1', 257, 263);
  const name = nulTerminated(block.subarray(0, 100));
  // POSIX ustar splits long names into a prefix; old GNU headers use those bytes for times.
  const prefix = magic === 'ustar\0' ? nulTerminated(block.subarray(345, 500)) : '';
  return {
    type: String.fromCharCode(block[156] as number),
    name: prefix === '' ? name : `${prefix}/${name}`,
    linkname: nulTerminated(block.subarray(157, 257)),
    mode: parseNumber(block.subarray(100, 108)),
    size: parseNumber(block.subarray(124, 136)),
    mtimeSeconds: parseNumber(block.subarray(136, 148)),
  };
}

/** A numeric field: octal text, or GNU's base-256 (first byte's high bit set) for large values. */
function parseNumber(field: Buffer): number {
  // Negative base-256 (a time before 1970): taken as 0, no use in a job's files.
  if (field[0] === 0xff) return 0;
  if (((field[0] as number) & 0x80) !== 0) {
    let value = (field[0] as number) & 0x7f;
    for (const byte of field.subarray(1)) value = value * 256 + byte;
    return value;
  }
  const text = field.toString('latin1').replace(/\0.*$/s, '').trim();
  if (text === '') return 0;
  if (!/^[0-7]+$/.test(text)) throw new TarFormatError(`not a tar archive: numeric field "${text}"`);
  return Number.parseInt(text, 8);
}

function nulTerminated(bytes: Buffer): string {
  const end = bytes.indexOf(0);
  return bytes.toString('utf8', 0, end === -1 ? bytes.length : end);
}

function entryKind(type: string, path: string, offset: number): TarEntryKind | undefined {
  switch (type) {
    case '0':
    case '\0':
    case '7':
      // v7 archives mark directories by a trailing slash only.
      return path.endsWith('/') ? 'directory' : 'file';
    case '1':
      return 'hardlink';
    case '2':
      return 'symlink';
    case '5':
    case 'D':
      return 'directory';
    case 'V':
      return undefined;
    default:
      throw new TarFormatError(
        `tar entry ${path} (byte ${offset}) is a ${describeType(type)}: only files, directories and links are unpacked`,
      );
  }
}

function describeType(type: string): string {
  const names: Record<string, string> = {
    '3': 'character device',
    '4': 'block device',
    '6': 'FIFO',
    S: 'sparse file',
    M: 'multi-volume continuation',
  };
  return names[type] ?? `entry of type ${JSON.stringify(type)}`;
}

/** Pax records `"<length> <key>=<value>\n"`. */
function parsePax(data: Buffer, offset: number): PendingOverrides {
  const overrides: PendingOverrides = {};
  let position = 0;
  while (position < data.length) {
    const space = data.indexOf(0x20, position);
    const length = space === -1 ? Number.NaN : Number(data.toString('latin1', position, space));
    if (!Number.isInteger(length) || length <= 0 || position + length > data.length) {
      if (data[position] === 0) break;
      throw new TarFormatError(`malformed pax header at byte ${offset}`);
    }
    const record = data.toString('utf8', space + 1, position + length - 1);
    const equals = record.indexOf('=');
    const key = record.slice(0, equals);
    const value = record.slice(equals + 1);
    if (key === 'path') overrides.path = value;
    else if (key === 'linkpath') overrides.linkTarget = value;
    else if (key === 'size') overrides.size = Number(value);
    else if (key === 'mtime') overrides.mtimeSeconds = Math.floor(Number(value));
    position += length;
  }
  if (overrides.size !== undefined && !(Number.isSafeInteger(overrides.size) && overrides.size >= 0)) {
    throw new TarFormatError(`malformed pax size at byte ${offset}`);
  }
  if (overrides.mtimeSeconds !== undefined && !Number.isFinite(overrides.mtimeSeconds))
    delete overrides.mtimeSeconds;
  return overrides;
}
