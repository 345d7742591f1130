import { createHash } from 'node:crypto';
import { ServerClientError } from '@dstack/core';

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * Uploads are stored by content: the name a client gives (dstack's clients send the sha256 as the
 * file name) must be the hash of the bytes, or two different contents could share one name.
 */
export function checkContentHash(claimed: string, bytes: Uint8Array): void {
  const actual = sha256Hex(bytes);
  if (claimed !== actual) {
    throw new ServerClientError(
      `file: the file name must be the sha256 of its bytes (${actual}), got "${claimed}"`,
      { code: 'invalid_request', fields: [['file']] },
    );
  }
}
