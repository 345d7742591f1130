/**
 * A self-signed TLS certificate made by `openssl`, for a local server that must speak HTTPS (a
 * Docker registry the hosts pull from, an emulator whose provider's SDK sends credentials only
 * over TLS). Whoever talks to the server trusts the certificate itself as its CA.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface SelfSignedCertificateFiles {
  /** The certificate's PEM file. */
  readonly certificate: string;
  /** The private key's PEM file. */
  readonly key: string;
}

/**
 * Writes `<name>.crt` and `<name>.key` into `directory`: an EC P-256 certificate valid for two
 * days for the IP `addresses` (its subject alternative names).
 */
export async function writeSelfSignedCertificate(
  directory: string,
  name: string,
  addresses: readonly string[],
): Promise<SelfSignedCertificateFiles> {
  const certificate = join(directory, `${name}.crt`);
  const key = join(directory, `${name}.key`);
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
    '-addext',
    `subjectAltName=${addresses.map((address) => `IP:${address}`).join(',')}`,
    '-keyout',
    key,
    '-out',
    certificate,
  ]);
  return { certificate, key };
}

/** A certificate and key for the IP `addresses`, as PEM text (the files are removed). */
export async function selfSignedCertificate(
  name: string,
  addresses: readonly string[],
): Promise<{ certificate: string; key: string }> {
  const directory = await mkdtemp(join(tmpdir(), 'dstack-certificate-'));
  try {
    const files = await writeSelfSignedCertificate(directory, name, addresses);
    return {
      certificate: await readFile(files.certificate, 'utf8'),
      key: await readFile(files.key, 'utf8'),
    };
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}
