/**
 * Reads an npm tarball (gzipped ustar) in memory: the paths it holds and the
 * text of a file, without a `tar` binary. npm tarballs put everything under
 * `package/`; the paths returned here are relative to it.
 */
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';

const BLOCK = 512;

function readString(buffer, offset, length) {
  const slice = buffer.subarray(offset, offset + length);
  const end = slice.indexOf(0);
  return slice.subarray(0, end === -1 ? slice.length : end).toString('utf8');
}

/**
 * The regular files of a tarball, in archive order.
 * @returns {{ path: string, content: Buffer }[]}
 */
export function readTarball(tarballPath) {
  const archive = gunzipSync(readFileSync(tarballPath));
  const files = [];
  let offset = 0;
  let longName = null;
  let paxPath = null;
  while (offset + BLOCK <= archive.length) {
    const header = archive.subarray(offset, offset + BLOCK);
    if (header.every((byte) => byte === 0)) break;
    const name = readString(header, 0, 100);
    const size = Number.parseInt(readString(header, 124, 12).trim() || '0', 8);
    const typeFlag = String.fromCharCode(header[156] || 48);
    const prefix = readString(header, 345, 155);
    const content = archive.subarray(offset + BLOCK, offset + BLOCK + size);
    offset += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
    if (typeFlag === 'L') {
      longName = readString(content, 0, content.length);
      continue;
    }
    if (typeFlag === 'x') {
      paxPath = /\d+ path=([^\n]+)\n/.exec(content.toString('utf8'))?.[1] ?? null;
      continue;
    }
    const fullName = paxPath ?? longName ?? (prefix ? `${prefix}/${name}` : name);
    longName = null;
    paxPath = null;
    if (typeFlag !== '0' && typeFlag !== '\0') continue;
    files.push({ path: fullName.replace(/^[^/]+\//, ''), content: Buffer.from(content) });
  }
  return files;
}
