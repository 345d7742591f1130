/**
 * OCI's request signatures (draft-cavage HTTP signatures, `version="1"`), verified as OCI's front
 * end does: `Authorization: Signature version="1",keyId="{tenancy}/{user}/{fingerprint}",
 * algorithm="rsa-sha256",headers="…",signature="…"`, over `(request-target)`, `date` and `host`
 * (and `x-content-sha256`, `content-type`, `content-length` for a body, whose SHA-256 must match),
 * with the API key the user uploaded; a `date` more than five minutes off is refused.
 */
import { createHash, createPublicKey, createVerify, type KeyObject } from 'node:crypto';
import type { EmulatorRequest } from '../../emulator/emulator-server.js';
import { notAuthenticated } from './oci-api-error.js';

/** A user's API signing key, as OCI knows it: its public half and its fingerprint. */
export interface OciApiKey {
  readonly tenancy: string;
  readonly user: string;
  /** `aa:bb:…`: the MD5 of the public key's DER, as the console shows it. */
  readonly fingerprint: string;
  readonly publicKey: KeyObject;
}

/** The MD5 fingerprint OCI shows for a public key (`aa:bb:…`). */
export function ociKeyFingerprint(publicKey: KeyObject): string {
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return (createHash('md5').update(der).digest('hex').match(/../g) ?? []).join(':');
}

const MAX_CLOCK_SKEW_MS = 5 * 60_000;

function signatureParameters(header: string): Record<string, string> {
  const parameters: Record<string, string> = {};
  for (const match of header.slice('Signature '.length).matchAll(/(\w+)="([^"]*)"/g)) {
    parameters[match[1] as string] = match[2] as string;
  }
  return parameters;
}

/** The signing string of `headers` for the request, as the client built it. */
function signingString(request: EmulatorRequest, headers: readonly string[]): string | undefined {
  const lines: string[] = [];
  for (const name of headers) {
    if (name === '(request-target)') {
      const query = request.searchParams.toString();
      lines.push(
        `(request-target): ${request.method.toLowerCase()} ${request.path}${query ? `?${query}` : ''}`,
      );
      continue;
    }
    const value = request.headers[name];
    if (value === undefined) return undefined;
    lines.push(`${name}: ${Array.isArray(value) ? value.join(', ') : value}`);
  }
  return lines.join('\n');
}

/**
 * The key that signed the request; throws OCI's 401 NotAuthenticated when the signature is
 * missing, malformed, by an unknown key, stale, or does not verify.
 */
export function verifyOciSignature(
  request: EmulatorRequest,
  keys: readonly OciApiKey[],
  now: number,
): OciApiKey {
  const authorization = request.headers.authorization ?? '';
  if (!authorization.startsWith('Signature ')) throw notAuthenticated();
  const parameters = signatureParameters(authorization);
  if (parameters.version !== '1' || parameters.algorithm !== 'rsa-sha256' || !parameters.signature) {
    throw notAuthenticated();
  }
  const key = keys.find((each) => `${each.tenancy}/${each.user}/${each.fingerprint}` === parameters.keyId);
  if (!key) throw notAuthenticated();
  const signed = (parameters.headers ?? 'date').split(' ');
  const required = ['(request-target)', 'date', 'host'];
  const hasBody = request.rawBody.length > 0;
  if (hasBody) required.push('x-content-sha256', 'content-type', 'content-length');
  if (!required.every((name) => signed.includes(name) || (name === 'date' && signed.includes('x-date')))) {
    throw notAuthenticated();
  }
  const date = Date.parse(String(request.headers['x-date'] ?? request.headers.date ?? ''));
  if (!Number.isFinite(date) || Math.abs(now - date) > MAX_CLOCK_SKEW_MS) throw notAuthenticated();
  if (hasBody) {
    const digest = createHash('sha256').update(request.rawBody).digest('base64');
    if (request.headers['x-content-sha256'] !== digest) throw notAuthenticated();
  }
  const text = signingString(request, signed);
  if (text === undefined) throw notAuthenticated();
  const valid = createVerify('RSA-SHA256').update(text).verify(key.publicKey, parameters.signature, 'base64');
  if (!valid) throw notAuthenticated();
  return key;
}

/** Reads a PEM public key. */
export function ociPublicKey(pem: string): KeyObject {
  return createPublicKey(pem);
}
