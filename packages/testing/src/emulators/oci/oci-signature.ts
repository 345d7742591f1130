/**
 * OCI's request signatures (draft-cavage HTTP signatures, as the OCI SDKs send them): the
 * `Authorization: Signature version="1",keyId="<tenancy>/<user>/<fingerprint>",algorithm="rsa-sha256",
 * headers="…",signature="…"` header is checked as OCI's front door checks it, so a request the
 * real OCI would refuse is refused here too: a known key, the required headers signed (`date` or
 * `x-date`, `(request-target)`, `host`; for a body also `content-length`, `content-type` and
 * `x-content-sha256`, which must be the body's hash), a date within 5 minutes, an RSA-SHA256
 * signature that verifies against the key's public key.
 */
import { createHash, createPublicKey, type KeyObject, verify } from 'node:crypto';
import type { EmulatorRequest } from '../../emulator/emulator-server.js';

/** One API signing key of a user. */
export interface OciApiKey {
  readonly tenancy: string;
  readonly user: string;
  readonly fingerprint: string;
  /** PEM. */
  readonly publicKey: string;
}

/** OCI refuses a request whose date is further than this from its clock. */
const MAX_CLOCK_SKEW_MS = 5 * 60_000;
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** The parameters of a `Signature …` authorization header. */
export function parseSignatureHeader(header: string | undefined): Record<string, string> | undefined {
  if (!header?.startsWith('Signature ')) return undefined;
  const parameters: Record<string, string> = {};
  for (const match of header.slice('Signature '.length).matchAll(/([A-Za-z]+)="([^"]*)"/g)) {
    parameters[match[1] as string] = match[2] as string;
  }
  return parameters;
}

/** The public key the fingerprint names (the MD5 of its DER), as OCI computes a key's fingerprint. */
export function publicKeyFingerprint(publicKey: string): string {
  const der = createPublicKey(publicKey).export({ type: 'spki', format: 'der' });
  return createHash('md5').update(der).digest('hex').match(/../g)?.join(':') ?? '';
}

export class OciSignatureVerifier {
  readonly #keys = new Map<string, KeyObject>();
  readonly #clock: () => number;

  constructor(keys: readonly OciApiKey[], clock: () => number = Date.now) {
    for (const key of keys) this.add(key);
    this.#clock = clock;
  }

  add(key: OciApiKey): void {
    this.#keys.set(`${key.tenancy}/${key.user}/${key.fingerprint}`, createPublicKey(key.publicKey));
  }

  /** The key id (`tenancy/user/fingerprint`) of a correctly signed request; else why it is refused. */
  verify(request: EmulatorRequest): { keyId: string } | { refused: string } {
    const authorization = request.headers.authorization;
    const parameters = parseSignatureHeader(Array.isArray(authorization) ? authorization[0] : authorization);
    if (!parameters) return { refused: 'no Signature authorization header' };
    const { keyId, algorithm, headers, signature } = parameters;
    if (!keyId || !headers || !signature) return { refused: 'keyId, headers and signature are required' };
    if (algorithm !== undefined && algorithm !== 'rsa-sha256') return { refused: `algorithm ${algorithm}` };
    const key = this.#keys.get(keyId);
    if (!key) return { refused: `unknown keyId ${keyId}` };
    const signed = headers.toLowerCase().split(/\s+/);
    const dateHeader = signed.includes('x-date') ? 'x-date' : signed.includes('date') ? 'date' : undefined;
    const required = ['(request-target)', 'host'];
    if (BODY_METHODS.has(request.method)) required.push('content-length', 'content-type', 'x-content-sha256');
    const missing = required.filter((name) => !signed.includes(name));
    if (!dateHeader || missing.length > 0)
      return { refused: `headers not signed: ${[...(dateHeader ? [] : ['date']), ...missing].join(' ')}` };
    const date = Date.parse(String(request.headers[dateHeader] ?? ''));
    if (!Number.isFinite(date) || Math.abs(this.#clock() - date) > MAX_CLOCK_SKEW_MS)
      return { refused: 'the date is missing or more than 5 minutes off' };
    if (BODY_METHODS.has(request.method)) {
      const digest = createHash('sha256').update(request.rawBody).digest('base64');
      if (request.headers['x-content-sha256'] !== digest)
        return { refused: 'x-content-sha256 is not the body' };
      if (Number(request.headers['content-length']) !== request.rawBody.length)
        return { refused: 'content-length is not the body' };
    }
    const lines = signed.map((name) =>
      name === '(request-target)'
        ? `(request-target): ${request.method.toLowerCase()} ${request.target}`
        : `${name}: ${String(request.headers[name] ?? '')}`,
    );
    const valid = verify('sha256', Buffer.from(lines.join('\n')), key, Buffer.from(signature, 'base64'));
    return valid ? { keyId } : { refused: 'the signature does not verify' };
  }
}
