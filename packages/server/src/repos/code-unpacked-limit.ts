/** The cap on what a job's code and file archives unpack to, as the server sends it to the runner. */
import { DEFAULT_CODE_UPLOAD_LIMIT_BYTES } from '@dstack/core';
import { CODE_UNPACKED_LIMIT_PER_UPLOAD_BYTE } from '@dstack/core/agent-protocol';
import type { ServerSettings } from '../context.js';

/**
 * `DSTACK_SERVER_CODE_UNPACKED_LIMIT` when set (0: none); else a multiple of the upload limit, so
 * an operator who raises the upload limit (or lifts it: 0) moves both.
 */
export function codeUnpackedLimitOf(settings: ServerSettings): number {
  if (settings.codeUnpackedLimitBytes !== undefined && settings.codeUnpackedLimitBytes !== null) {
    return settings.codeUnpackedLimitBytes;
  }
  const uploadLimit = settings.codeUploadLimitBytes ?? DEFAULT_CODE_UPLOAD_LIMIT_BYTES;
  return uploadLimit * CODE_UNPACKED_LIMIT_PER_UPLOAD_BYTE;
}
