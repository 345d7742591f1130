/**
 * Writes tar archives byte by byte, hostile ones included (absolute names, `..`, links to
 * anywhere, setuid modes): what a user could upload, which no well-behaved writer produces.
 */
import { gzipSync } from 'node:zlib';

const BLOCK = 512;

export interface CraftedEntry {
  /** The header's name field (at most 100 bytes); see `pax` and `gnuLongName` for longer ones. */
  name: string;
  /** The type flag: '0' file, '1' hard link, '2' symlink, '5' directory, 'x' pax, 'L'/'K' GNU long name. */
  type: string;
  mode?: number;
  content?: string | Buffer;
  linkname?: string;
  mtimeSeconds?: number;
  /** POSIX ustar's name prefix (155 bytes). */
  prefix?: string;
  /** Writes the size in GNU's base-256 (as GNU tar does for files over 8 GiB). */
  base256Size?: boolean;
}

export const file = (name: string, content: string, mode = 0o644): CraftedEntry => ({
  name,
  type: '0',
  content,
  mode,
});
export const directory = (name: string, mode = 0o755): CraftedEntry => ({ name, type: '5', mode });
export const symlink = (name: string, target: string): CraftedEntry => ({
  name,
  type: '2',
  linkname: target,
  mode: 0o777,
});
export const hardLink = (name: string, target: string): CraftedEntry => ({
  name,
  type: '1',
  linkname: target,
  mode: 0o644,
});

/** A pax extended header for the entry after it. */
export function pax(records: Record<string, string>): CraftedEntry {
  const text = Object.entries(records)
    .map(([key, value]) => {
      const body = ` ${key}=${value}\n`;
      let length = Buffer.byteLength(body) + 1;
      while (String(length).length + Buffer.byteLength(body) !== length) length += 1;
      return `${length}${body}`;
    })
    .join('');
  return { name: 'PaxHeader/entry', type: 'x', content: text, mode: 0o644 };
}

/** GNU's long name ('L') or long link target ('K') for the entry after it. */
export function gnuLongName(value: string, type: 'L' | 'K' = 'L'): CraftedEntry {
  return { name: '././@LongLink', type, content: `${value}\0`, mode: 0o644 };
}

/** The tar bytes of `entries` (ustar headers, two zero blocks at the end), gzipped if asked. */
export function craftTar(entries: readonly CraftedEntry[], options: { gzip?: boolean } = {}): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    const content = Buffer.from(entry.content ?? '');
    parts.push(
      header(entry, content.length),
      content,
      Buffer.alloc((BLOCK - (content.length % BLOCK)) % BLOCK),
    );
  }
  parts.push(Buffer.alloc(2 * BLOCK));
  const tar = Buffer.concat(parts);
  return options.gzip ? gzipSync(tar) : tar;
}

function header(entry: CraftedEntry, size: number): Buffer {
  const block = Buffer.alloc(BLOCK);
  if (Buffer.byteLength(entry.name) > 100) throw new Error(`crafted name too long: ${entry.name}`);
  block.write(entry.name, 0, 100, 'utf8');
  octal(block, 100, 8, entry.mode ?? 0o644);
  octal(block, 108, 8, 0);
  octal(block, 116, 8, 0);
  if (entry.base256Size) {
    block[124] = 0x80;
    block.writeUIntBE(size, 136 - 6, 6);
  } else {
    octal(block, 124, 12, size);
  }
  octal(block, 136, 12, entry.mtimeSeconds ?? 1_700_000_000);
  block.fill(' ', 148, 156);
  block.write(entry.type, 156, 1, 'latin1');
  block.write(entry.linkname ?? '', 157, 100, 'utf8');
  block.write('ustar\u000000', 257, 8, 'latin1');
  block.write(entry.prefix ?? '', 345, 155, 'utf8');
  let checksum = 0;
  for (const byte of block) checksum += byte;
  block.write(`${checksum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'latin1');
  return block;
}

function octal(block: Buffer, offset: number, width: number, value: number): void {
  block.write(`${value.toString(8).padStart(width - 1, '0')}\0`, offset, width, 'latin1');
}
