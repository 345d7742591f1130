/** How much code and how many files a run may bring: the upload and unpacked limits. */
import { DEFAULT_CODE_UPLOAD_LIMIT_BYTES } from '@dstack/core';
import { CODE_UNPACKED_LIMIT_PER_UPLOAD_BYTE } from '@dstack/core/agent-protocol';
import { type Environment, integerVariable, stringVariable } from '../environment-variables.js';

export interface CodeSettings {
  /**
   * `DSTACK_SERVER_CODE_UPLOAD_LIMIT`: the largest code or file archive `repos/upload_code` and
   * `files/upload_archive` take, in bytes; 0 means no limit. Default dstack's 2 MiB.
   */
  uploadLimitBytes: number;
  /**
   * `DSTACK_SERVER_CODE_UNPACKED_LIMIT`: the most bytes a job's code or a `files:` archive may
   * unpack to on the runner (a gzipped tar of zeros grows a thousandfold); 0 means no limit; the
   * job fails naming the variable when one is over. Null: 64 times the upload limit (see
   * `codeUnpackedLimitOf`).
   */
  unpackedLimitBytes: number | null;
}

export function readCodeSettings(env: Environment): CodeSettings {
  const bytes = { min: 0, max: Number.MAX_SAFE_INTEGER };
  return {
    uploadLimitBytes: integerVariable(
      env,
      'DSTACK_SERVER_CODE_UPLOAD_LIMIT',
      DEFAULT_CODE_UPLOAD_LIMIT_BYTES,
      bytes,
    ),
    unpackedLimitBytes:
      stringVariable(env, 'DSTACK_SERVER_CODE_UNPACKED_LIMIT') === null
        ? null
        : integerVariable(env, 'DSTACK_SERVER_CODE_UNPACKED_LIMIT', 0, bytes),
  };
}

/**
 * The cap on what a job's code and file archives unpack to, as the server sends it to the runner:
 * `DSTACK_SERVER_CODE_UNPACKED_LIMIT` when set (0: none); else a multiple of the upload limit, so
 * an operator who raises the upload limit (or lifts it: 0) moves both.
 */
export function codeUnpackedLimitOf(settings: CodeSettings): number {
  return settings.unpackedLimitBytes ?? settings.uploadLimitBytes * CODE_UNPACKED_LIMIT_PER_UPLOAD_BYTE;
}
