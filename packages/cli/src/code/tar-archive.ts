/**
 * A reproducible gzipped tar (POSIX ustar, with pax headers for long names): the same files give
 * the same bytes, so the server stores the same code once (it is keyed by its sha256). Entries
 * are written in the order given, owner 0:0 without names, gzip without a time stamp.
 */
import { readFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';

export type TarEntry =
  | { kind: 'file'; name: string; mode: number; mtimeSeconds: number; sourcePath: string }
  | { kind: 'directory'; name: string; mode: number; mtimeSeconds: number }
  | { kind: 'symlink'; name: string; mode: number; mtimeSeconds: number; target: string };

const BLOCK = 512;

function octal(value: number, width: number): string {
  // width - 1 digits and a NUL terminator, as tar writes numeric fields.
  return `${value.toString(8).padStart(width - 1, '0')}\0`;
}

function writeString(block: Buffer, text: string, offset: number, width: number): void {
  block.write(text, offset, Math.min(Buffer.byteLength(text), width), 'utf8');
}

function header(fields: {
  name: string;
  mode: number;
  size: number;
  mtimeSeconds: number;
  type: string;
  linkname?: string;
}): Buffer {
  const block = Buffer.alloc(BLOCK);
  writeString(block, fields.name, 0, 100);
  writeString(block, octal(fields.mode & 0o7777, 8), 100, 8);
  writeString(block, octal(0, 8), 108, 8);
  writeString(block, octal(0, 8), 116, 8);
  writeString(block, octal(fields.size, 12), 124, 12);
  writeString(block, octal(Math.max(0, Math.floor(fields.mtimeSeconds)), 12), 136, 12);
  block.fill(' ', 148, 156);
  writeString(block, fields.type, 156, 1);
  writeString(block, fields.linkname ?? '', 157, 100);
  writeString(block, 'ustar\0', 257, 6);
  writeString(block, '00', 263, 2);
  let checksum = 0;
  for (const byte of block) checksum += byte;
  writeString(block, `${checksum.toString(8).padStart(6, '0')}\0 `, 148, 8);
  return block;
}

function padding(size: number): Buffer {
  const rest = size % BLOCK;
  return Buffer.alloc(rest === 0 ? 0 : BLOCK - rest);
}

/** A pax record `"<len> key=value\n"`, whose length counts its own digits. */
function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let length = Buffer.byteLength(body) + 1;
  while (String(length).length + Buffer.byteLength(body) !== length) length += 1;
  return `${length}${body}`;
}

function paxHeaderFor(name: string, linkname: string | undefined): Buffer[] {
  const records: string[] = [];
  if (Buffer.byteLength(name) > 100) records.push(paxRecord('path', name));
  if (linkname !== undefined && Buffer.byteLength(linkname) > 100)
    records.push(paxRecord('linkpath', linkname));
  if (records.length === 0) return [];
  const data = Buffer.from(records.join(''), 'utf8');
  return [
    header({ name: 'PaxHeader', mode: 0o644, size: data.length, mtimeSeconds: 0, type: 'x' }),
    data,
    padding(data.length),
  ];
}

/** The tar of `entries`, gzipped. Reads each file's bytes when it writes it. */
export async function createTarGz(entries: readonly TarEntry[]): Promise<Uint8Array> {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    const name = entry.kind === 'directory' && !entry.name.endsWith('/') ? `${entry.name}/` : entry.name;
    const linkname = entry.kind === 'symlink' ? entry.target : undefined;
    parts.push(...paxHeaderFor(name, linkname));
    if (entry.kind === 'file') {
      const data = await readFile(entry.sourcePath);
      parts.push(
        header({ name, mode: entry.mode, size: data.length, mtimeSeconds: entry.mtimeSeconds, type: '0' }),
      );
      parts.push(data, padding(data.length));
    } else if (entry.kind === 'directory') {
      parts.push(header({ name, mode: entry.mode, size: 0, mtimeSeconds: entry.mtimeSeconds, type: '5' }));
    } else {
      parts.push(
        header({ name, mode: entry.mode, size: 0, mtimeSeconds: entry.mtimeSeconds, type: '2', linkname }),
      );
    }
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  return new Uint8Array(gzipSync(Buffer.concat(parts)));
}
