/**
 * How large a job's code may grow when the runner unpacks it. The server caps uploads
 * (`DSTACK_SERVER_CODE_UPLOAD_LIMIT`, dstack's 2 MiB), but a gzipped tar of zeros grows about a
 * thousandfold: a 2 MiB upload could fill 2 GiB of the host's disk. The runner stops unpacking
 * past a cap the server sends with the job (`code_unpacked_limit`), and the job fails naming it.
 */

/** The server's variable that sets the cap, in bytes (0: none). */
export const CODE_UNPACKED_LIMIT_VARIABLE = 'DSTACK_SERVER_CODE_UNPACKED_LIMIT';

/**
 * The cap when the server's variable is unset: this many times the upload limit, so raising the
 * upload limit raises both (source code compresses well under this ratio).
 */
export const CODE_UNPACKED_LIMIT_PER_UPLOAD_BYTE = 64;

/** The cap of a runner given none (a server that sends no `code_unpacked_limit`): 64 × dstack's 2 MiB. */
export const DEFAULT_CODE_UNPACKED_LIMIT_BYTES = CODE_UNPACKED_LIMIT_PER_UPLOAD_BYTE * 2 * 1024 * 1024;

/** `2.0MB`, `512.0KB`, `17B`: sizes as dstack's `sizeof_fmt` prints them in upload limit errors. */
export function formatByteSize(bytes: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let value = bytes;
  for (const unit of units) {
    if (Math.abs(value) < 1024 || unit === 'TB') {
      return unit === 'B' ? `${value}B` : `${value.toFixed(1)}${unit}`;
    }
    value /= 1024;
  }
  return `${bytes}B`;
}

/** Why a job's archive was not unpacked: what it is, the cap, and the setting that raises it. */
export function codeUnpackedLimitMessage(what: string, limitBytes: number): string {
  return (
    `${what} unpacks to more than ${formatByteSize(limitBytes)} (${limitBytes} bytes), the limit of` +
    ` unpacked code. Exclude large files with .gitignore/.dstackignore, or raise the limit with the` +
    ` server's ${CODE_UNPACKED_LIMIT_VARIABLE} environment variable (bytes; 0: no limit).`
  );
}
