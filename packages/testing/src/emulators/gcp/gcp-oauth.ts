/**
 * Service accounts and OAuth for the GCP emulator. The emulator makes each account's RSA key
 * pair and gives out the service-account JSON (its `token_uri` at the emulator), so a client's
 * real JWT signing runs unchanged; `POST /token` verifies the RS256 assertion with the account's
 * public key and answers an access token, as oauth2.googleapis.com does. Compute and Billing
 * calls then need `Authorization: Bearer <token>`: an access token from here, or a JWT the
 * account signed itself (what Python's GAPIC clients send, `always_use_jwt_access`).
 */
import { createPublicKey, generateKeyPairSync, type KeyObject, randomBytes, verify } from 'node:crypto';
import { EmulatorHttpError, json } from '../../emulator/emulator-responses.js';
import type { EmulatorRequest } from '../../emulator/emulator-server.js';
import { gcpErrorResponse } from './gcp-api-error.js';

/** Where google-auth-library posts the assertion, and the `aud` it signs, whatever `token_uri` says. */
export const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';
export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** The path of the emulator's token endpoint: `token_uri` is `<emulator url>/token`. */
export const TOKEN_PATH = '/token';

export interface GcpServiceAccount {
  readonly email: string;
  readonly clientId: string;
  readonly privateKeyId: string;
  /** PKCS#8 PEM, as in a key file. */
  readonly privateKey: string;
  readonly publicKey: KeyObject;
}

/** The key file (`gcloud iam service-accounts keys create`) of `account` for `project`. */
export interface ServiceAccountJson {
  readonly type: 'service_account';
  readonly project_id: string;
  readonly private_key_id: string;
  readonly private_key: string;
  readonly client_email: string;
  readonly client_id: string;
  readonly auth_uri: string;
  readonly token_uri: string;
  readonly auth_provider_x509_cert_url: string;
  readonly client_x509_cert_url: string;
  readonly universe_domain: string;
}

/** Makes a service account of `project` with a fresh 2048-bit RSA key. */
export function createServiceAccount(project: string, name = 'dstack'): GcpServiceAccount {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  return {
    email: `${name}@${project}.iam.gserviceaccount.com`,
    clientId: BigInt(`0x${randomBytes(8).toString('hex')}`)
      .toString()
      .padStart(21, '1'),
    privateKeyId: randomBytes(20).toString('hex'),
    privateKey,
    publicKey: createPublicKey(publicKey),
  };
}

export function serviceAccountJson(
  account: GcpServiceAccount,
  project: string,
  emulatorUrl: string,
): ServiceAccountJson {
  return {
    type: 'service_account',
    project_id: project,
    private_key_id: account.privateKeyId,
    private_key: account.privateKey,
    client_email: account.email,
    client_id: account.clientId,
    auth_uri: 'https://accounts.google.com/o/oauth2/auth',
    token_uri: `${emulatorUrl}${TOKEN_PATH}`,
    auth_provider_x509_cert_url: 'https://www.googleapis.com/oauth2/v1/certs',
    client_x509_cert_url: `https://www.googleapis.com/robot/v1/metadata/x509/${encodeURIComponent(account.email)}`,
    universe_domain: 'googleapis.com',
  };
}

interface JwtParts {
  readonly header: Record<string, unknown>;
  readonly claims: Record<string, unknown>;
  readonly signedPart: string;
  readonly signature: Buffer;
}

function parseJwt(token: string): JwtParts | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [header, claims, signature] = parts as [string, string, string];
  try {
    return {
      header: JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as Record<string, unknown>,
      claims: JSON.parse(Buffer.from(claims, 'base64url').toString('utf8')) as Record<string, unknown>,
      signedPart: `${header}.${claims}`,
      signature: Buffer.from(signature, 'base64url'),
    };
  } catch {
    return undefined;
  }
}

function oauthError(error: string, description: string, status = 400): EmulatorHttpError {
  return new EmulatorHttpError(json({ error, error_description: description }, status));
}

const unauthenticated = () =>
  new EmulatorHttpError(
    gcpErrorResponse(
      401,
      'authError',
      'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.',
    ),
  );

export interface GcpOAuthOptions {
  readonly accounts: readonly GcpServiceAccount[];
  /** The emulator's clock (access token expiry). JWT `iat`/`exp` are checked against the real time, the signer's. */
  readonly clock: () => number;
  /** How long an access token lives, ms. Default 3599 s, as Google answers. */
  readonly tokenLifetimeMs?: number;
  /** Whether every key is rejected (the INVALID_GRANT fault: the key was deleted). */
  readonly keysRevoked: () => boolean;
  /** The emulator's own token URL, accepted as `aud` besides Google's. */
  readonly tokenUrl: () => string;
}

interface IssuedToken {
  readonly email: string;
  readonly expiresAt: number;
}

/** Longest lifetime of an assertion Google accepts (`exp - iat`), plus the clock skew it tolerates. */
const MAX_ASSERTION_LIFETIME_S = 3600;
const CLOCK_SKEW_S = 300;

export class GcpOAuth {
  readonly #tokens = new Map<string, IssuedToken>();
  readonly #options: GcpOAuthOptions;
  readonly #lifetimeMs: number;

  constructor(options: GcpOAuthOptions) {
    this.#options = options;
    this.#lifetimeMs = options.tokenLifetimeMs ?? 3599_000;
  }

  /** `POST /token`: the JWT-bearer grant. */
  exchange(request: EmulatorRequest) {
    const form =
      typeof request.body === 'object' && request.body !== null
        ? (request.body as Record<string, string>)
        : {};
    if (form.grant_type !== JWT_BEARER_GRANT) {
      throw oauthError('unsupported_grant_type', `Invalid grant_type: ${form.grant_type ?? ''}`);
    }
    const assertion = parseJwt(form.assertion ?? '');
    if (!assertion) throw oauthError('invalid_request', 'Invalid JWT: assertion is not a JWS');
    const account = this.#verifyAssertion(assertion, [GOOGLE_TOKEN_URL, this.#options.tokenUrl()]);
    const accessToken = `ya29.emulator-${randomBytes(24).toString('base64url')}`;
    this.#tokens.set(accessToken, {
      email: account.email,
      expiresAt: this.#options.clock() + this.#lifetimeMs,
    });
    return json({
      access_token: accessToken,
      expires_in: Math.floor(this.#lifetimeMs / 1000),
      token_type: 'Bearer',
    });
  }

  /** The account a Compute or Billing request is authorized as, or the 401 Google answers. */
  authenticate(request: EmulatorRequest): GcpServiceAccount {
    const header = request.headers.authorization;
    const value = Array.isArray(header) ? header[0] : header;
    const token = /^Bearer (.+)$/i.exec(value ?? '')?.[1];
    if (!token || this.#options.keysRevoked()) throw unauthenticated();
    const issued = this.#tokens.get(token);
    if (issued) {
      const account = this.#options.accounts.find((each) => each.email === issued.email);
      if (!account || this.#options.clock() >= issued.expiresAt) throw unauthenticated();
      return account;
    }
    // A self-signed JWT: audience is the API (`https://compute.googleapis.com/`) or a scope is given.
    const jwt = parseJwt(token);
    if (!jwt) throw unauthenticated();
    try {
      return this.#verifyAssertion(jwt, undefined);
    } catch {
      throw unauthenticated();
    }
  }

  /** Whether `token` is an access token this emulator issued and that has not expired. */
  isIssued(token: string): boolean {
    const issued = this.#tokens.get(token);
    return issued !== undefined && this.#options.clock() < issued.expiresAt;
  }

  #verifyAssertion(jwt: JwtParts, audiences: readonly string[] | undefined): GcpServiceAccount {
    if (jwt.header.alg !== 'RS256') throw oauthError('invalid_grant', 'Invalid JWT Signature.');
    const email = jwt.claims.iss;
    const account = this.#options.accounts.find((each) => each.email === email);
    if (!account) throw oauthError('invalid_grant', 'Invalid grant: account not found');
    if (this.#options.keysRevoked()) throw oauthError('invalid_grant', 'Invalid JWT Signature.');
    const signatureOk = verify('sha256', Buffer.from(jwt.signedPart), account.publicKey, jwt.signature);
    if (!signatureOk) throw oauthError('invalid_grant', 'Invalid JWT Signature.');
    if (audiences && !audiences.includes(String(jwt.claims.aud))) {
      throw oauthError('invalid_grant', 'Invalid JWT: Failed audience check.');
    }
    const iat = Number(jwt.claims.iat);
    const exp = Number(jwt.claims.exp);
    const now = Date.now() / 1000;
    if (
      !Number.isFinite(iat) ||
      !Number.isFinite(exp) ||
      exp - iat > MAX_ASSERTION_LIFETIME_S ||
      iat > now + CLOCK_SKEW_S ||
      exp < now - CLOCK_SKEW_S
    ) {
      throw oauthError(
        'invalid_grant',
        'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.',
      );
    }
    return account;
  }
}
