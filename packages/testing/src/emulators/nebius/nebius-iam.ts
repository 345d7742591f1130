/**
 * Nebius's IAM in the emulator: the service account (an RSA key pair made per emulator), the
 * token exchange of its RS256 JWT for a Bearer IAM token, and the check of that token on every
 * other call.
 */
import { createVerify, generateKeyPairSync, randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import type { NebiusEmulatorFaults } from './nebius-emulator-faults.js';
import type { NebiusServiceAccountKey } from './nebius-emulator-types.js';
import { type NebiusRequest, RpcError } from './nebius-rpc.js';

const TOKEN_AUDIENCE = 'token-service.iam.new.nebiuscloud.net';

/** The JWT's claims when its RS256 signature verifies with `publicKey`; else an RpcError. */
function verifyJwt(
  jwt: string,
  publicKeys: Map<string, string>,
): { header: Record<string, unknown>; claims: Record<string, unknown> } {
  const [header64, claims64, signature64] = jwt.split('.');
  if (!header64 || !claims64 || !signature64)
    throw new RpcError(grpc.status.UNAUTHENTICATED, 'malformed subject token');
  const decode = (part: string) =>
    JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
  const header = decode(header64);
  const claims = decode(claims64);
  const key = typeof header.kid === 'string' ? publicKeys.get(header.kid) : undefined;
  if (header.alg !== 'RS256' || key === undefined)
    throw new RpcError(grpc.status.UNAUTHENTICATED, 'unknown public key');
  const valid = createVerify('RSA-SHA256')
    .update(`${header64}.${claims64}`)
    .verify(key, Buffer.from(signature64, 'base64url'));
  if (!valid) throw new RpcError(grpc.status.UNAUTHENTICATED, 'invalid signature of the subject token');
  return { header, claims };
}

export interface NebiusIam {
  readonly serviceAccount: NebiusServiceAccountKey;
  /** `nebius.iam.v1.TokenExchangeService.Exchange`. */
  exchange(request: NebiusRequest): unknown;
  /** Throws UNAUTHENTICATED unless the call carries a live IAM token. */
  authenticate(call: grpc.ServerUnaryCall<unknown, unknown>): void;
}

/** The IAM of one emulator: tokens live `lifetime` seconds; `INVALID_CREDENTIALS` faults refuse. */
export function createNebiusIam(lifetime: number, faults: NebiusEmulatorFaults): NebiusIam {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const serviceAccount: NebiusServiceAccountKey = {
    serviceAccountId: 'serviceaccount-e00emulator',
    publicKeyId: 'publickey-e00emulator',
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
  const publicKeys = new Map([
    [serviceAccount.publicKeyId, publicKey.export({ type: 'spki', format: 'pem' }).toString()],
  ]);
  const tokens = new Map<string, number>();

  function authenticate(call: grpc.ServerUnaryCall<unknown, unknown>): void {
    const bearer = /^Bearer\s+(.+)$/i.exec(String(call.metadata.get('authorization')[0] ?? ''))?.[1];
    const expiresAt = bearer === undefined ? undefined : tokens.get(bearer);
    if (expiresAt === undefined || expiresAt <= Date.now() || faults.fire('INVALID_CREDENTIALS')) {
      throw new RpcError(grpc.status.UNAUTHENTICATED, 'invalid or expired access token');
    }
  }

  function exchange(request: NebiusRequest): unknown {
    if (
      request.grant_type !== 'urn:ietf:params:oauth:grant-type:token-exchange' ||
      request.subject_token_type !== 'urn:ietf:params:oauth:token-type:jwt'
    ) {
      throw new RpcError(grpc.status.INVALID_ARGUMENT, 'grant_type: token-exchange of a jwt subject token');
    }
    if (faults.fire('INVALID_CREDENTIALS'))
      throw new RpcError(grpc.status.UNAUTHENTICATED, 'service account credentials are invalid');
    const { claims } = verifyJwt(String(request.subject_token ?? ''), publicKeys);
    const now = Date.now() / 1000;
    if (
      claims.iss !== serviceAccount.serviceAccountId ||
      claims.sub !== claims.iss ||
      claims.aud !== TOKEN_AUDIENCE ||
      typeof claims.exp !== 'number' ||
      claims.exp < now
    ) {
      throw new RpcError(grpc.status.UNAUTHENTICATED, 'the subject token is not a valid service account JWT');
    }
    const token = `ne1${randomBytes(24).toString('hex')}`;
    tokens.set(token, Date.now() + lifetime * 1000);
    return {
      access_token: token,
      issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      token_type: 'Bearer',
      expires_in: lifetime,
    };
  }

  return { serviceAccount, exchange, authenticate };
}
