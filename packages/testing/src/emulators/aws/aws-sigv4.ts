/**
 * Signature Version 4 as AWS checks it: the credential scope names the key, date, region and
 * service of a request, and the signature is recomputed from the secret to catch a wrong one.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** What the `authorization` header of a signed request says. */
export interface SigV4Authorization {
  readonly accessKeyId: string;
  /** `yyyymmdd` of the credential scope. */
  readonly date: string;
  readonly region: string;
  /** The signing name: `ec2`, `sts`, `servicequotas`, `pricing`. */
  readonly service: string;
  readonly signedHeaders: readonly string[];
  readonly signature: string;
}

const AUTHORIZATION_PATTERN =
  /^AWS4-HMAC-SHA256\s+Credential=([^/,\s]+)\/(\d{8})\/([^/,\s]+)\/([^/,\s]+)\/aws4_request,\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]{64})\s*$/;

/** The parsed `authorization` header, or undefined when it is absent or not SigV4. */
export function parseSigV4Authorization(header: string | undefined): SigV4Authorization | undefined {
  const found = header ? AUTHORIZATION_PATTERN.exec(header) : null;
  if (!found) return undefined;
  const [, accessKeyId, date, region, service, signedHeaders, signature] = found;
  if (!accessKeyId || !date || !region || !service || !signedHeaders || !signature) return undefined;
  return { accessKeyId, date, region, service, signedHeaders: signedHeaders.split(';'), signature };
}

export interface SignedRequest {
  readonly method: string;
  /** The path as sent, e.g. `/`. */
  readonly path: string;
  readonly searchParams: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
  readonly rawBody: Buffer;
}

/** Whether `authorization.signature` is the signature of `request` with `secretAccessKey`. */
export function sigV4SignatureMatches(
  request: SignedRequest,
  authorization: SigV4Authorization,
  secretAccessKey: string,
): boolean {
  const amzDate = headerValue(request.headers['x-amz-date']);
  if (!amzDate?.startsWith(authorization.date)) return false;
  const bodyHash = sha256Hex(request.rawBody);
  const declaredHash = headerValue(request.headers['x-amz-content-sha256']);
  if (declaredHash !== undefined && declaredHash !== 'UNSIGNED-PAYLOAD' && declaredHash !== bodyHash) {
    return false;
  }
  const canonicalRequest = [
    request.method,
    canonicalPath(request.path),
    canonicalQuery(request.searchParams),
    ...authorization.signedHeaders.map(
      (name) => `${name}:${(headerValue(request.headers[name]) ?? '').trim().replace(/\s+/g, ' ')}`,
    ),
    '',
    authorization.signedHeaders.join(';'),
    declaredHash ?? bodyHash,
  ].join('\n');
  const scope = `${authorization.date}/${authorization.region}/${authorization.service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonicalRequest)].join('\n');
  let key: Buffer = hmac(`AWS4${secretAccessKey}`, authorization.date);
  for (const part of [authorization.region, authorization.service, 'aws4_request']) key = hmac(key, part);
  const expected = hmac(key, stringToSign);
  const given = Buffer.from(authorization.signature, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(',') : value;
}

function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

/** RFC 3986 encoding as SigV4 wants it (`encodeURIComponent` plus `!'()*`). */
function uriEncode(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/** Every segment encoded once more, as non-S3 services sign it. */
function canonicalPath(path: string): string {
  return path
    .split('/')
    .map((segment) => uriEncode(decodeURIComponent(segment)))
    .map((segment) => uriEncode(segment))
    .join('/');
}

function canonicalQuery(searchParams: URLSearchParams): string {
  return [...searchParams.entries()]
    .map(([key, value]) => [uriEncode(key), uriEncode(value)] as const)
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([key, value]) => `${key}=${value}`)
    .join('&');
}
