/**
 * A PKCS#10 certificate signing request (RFC 2986) for one DNS name, as ACME's finalize takes it
 * (RFC 8555 §7.4): node:crypto makes keys and signatures but not CSRs, and the few DER shapes a
 * CSR needs are written here rather than pulling an ASN.1 library into the gateway agent.
 */
import { createPublicKey, type KeyObject, sign } from 'node:crypto';

function length(size: number): Buffer {
  if (size < 0x80) return Buffer.from([size]);
  const bytes: number[] = [];
  for (let rest = size; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function element(tag: number, ...contents: Buffer[]): Buffer {
  const body = Buffer.concat(contents);
  return Buffer.concat([Buffer.from([tag]), length(body.length), body]);
}

const sequence = (...contents: Buffer[]) => element(0x30, ...contents);
const set = (...contents: Buffer[]) => element(0x31, ...contents);

function objectIdentifier(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number);
  const bytes = [first * 40 + second];
  for (const arc of rest) {
    const group = [arc & 0x7f];
    for (let value = Math.floor(arc / 128); value > 0; value = Math.floor(value / 128))
      group.unshift(0x80 | (value & 0x7f));
    bytes.push(...group);
  }
  return element(0x06, Buffer.from(bytes));
}

const COMMON_NAME = '2.5.4.3';
const EXTENSION_REQUEST = '1.2.840.113549.1.9.14';
const SUBJECT_ALT_NAME = '2.5.29.17';
const ECDSA_WITH_SHA256 = '1.2.840.10045.4.3.2';
const SHA256_WITH_RSA = '1.2.840.113549.1.1.11';

/** The DER CSR for `hostname` (subject CN and the one subjectAltName), signed with `privateKey` (EC P-256 or RSA). */
export function certificateRequestFor(hostname: string, privateKey: KeyObject): Buffer {
  const name = Buffer.from(hostname, 'ascii');
  const subject = sequence(set(sequence(objectIdentifier(COMMON_NAME), element(0x0c, name))));
  const publicKeyInfo = createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
  // [2] IMPLICIT IA5String: a dNSName GeneralName.
  const altNames = sequence(element(0x82, name));
  const extensions = sequence(sequence(objectIdentifier(SUBJECT_ALT_NAME), element(0x04, altNames)));
  const attributes = element(0xa0, sequence(objectIdentifier(EXTENSION_REQUEST), set(extensions)));
  const info = sequence(element(0x02, Buffer.from([0])), subject, publicKeyInfo, attributes);
  const isEc = privateKey.asymmetricKeyType === 'ec';
  // An ECDSA AlgorithmIdentifier has no parameters; RSA's has NULL.
  const algorithm = isEc
    ? sequence(objectIdentifier(ECDSA_WITH_SHA256))
    : sequence(objectIdentifier(SHA256_WITH_RSA), Buffer.from([0x05, 0x00]));
  const signature = sign('sha256', info, privateKey);
  return sequence(info, algorithm, element(0x03, Buffer.from([0]), signature));
}
