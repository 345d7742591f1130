/**
 * Microsoft Entra ID (Azure AD) as the client-credentials flow of a service principal meets it:
 * the tenant's OpenID metadata (`GET /{tenant}/v2.0/.well-known/openid-configuration`, which MSAL
 * reads to find the token endpoint) and the v2 token endpoint (`POST /{tenant}/oauth2/v2.0/token`
 * with `grant_type=client_credentials`, `client_id`, `client_secret`, `scope`). An unknown tenant,
 * client or secret is answered with AAD's error document and AADSTS code; a valid secret gets a
 * bearer token for the scope's resource, which Resource Manager then checks.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { EmulatorHttpError, type EmulatorResponse, json } from '../../emulator/emulator-responses.js';
import type { EmulatorRequest } from '../../emulator/emulator-server.js';

/** A service principal of the tenant: an app registration with a client secret. */
export interface AzureServicePrincipal {
  readonly tenantId: string;
  readonly clientId: string;
  readonly clientSecret: string;
}

/** Creates a service principal with fresh ids and secret. */
export function createServicePrincipal(tenantId: string = randomUUID()): AzureServicePrincipal {
  return { tenantId, clientId: randomUUID(), clientSecret: randomBytes(24).toString('base64url') };
}

/** How long an access token lives (AAD's default for client credentials: one hour). */
const TOKEN_LIFETIME_SECONDS = 3599;

function aadError(status: number, error: string, code: number, description: string): EmulatorHttpError {
  return new EmulatorHttpError(
    json(
      {
        error,
        error_description: `AADSTS${code}: ${description}\r\nTrace ID: ${randomUUID()}\r\nCorrelation ID: ${randomUUID()}\r\nTimestamp: ${new Date().toISOString().replace('T', ' ').slice(0, 19)}Z`,
        error_codes: [code],
        timestamp: new Date().toISOString(),
        trace_id: randomUUID(),
        correlation_id: randomUUID(),
      },
      status,
    ),
  );
}

export class AzureActiveDirectory {
  readonly #principals: readonly AzureServicePrincipal[];
  readonly #tokens = new Map<string, { clientId: string; expiresAt: number }>();
  readonly #clock: () => number;
  /** True while the principals' secrets are revoked (a fault): the token endpoint refuses them. */
  readonly #secretsRevoked: () => boolean;

  constructor(options: {
    principals: readonly AzureServicePrincipal[];
    clock: () => number;
    secretsRevoked: () => boolean;
  }) {
    this.#principals = options.principals;
    this.#clock = options.clock;
    this.#secretsRevoked = options.secretsRevoked;
  }

  #knowsTenant(tenant: string): boolean {
    return this.#principals.some((principal) => principal.tenantId === tenant);
  }

  /** `GET /{tenant}/v2.0/.well-known/openid-configuration`. */
  openIdConfiguration(request: EmulatorRequest): EmulatorResponse {
    const tenant = request.params.tenant ?? '';
    if (!this.#knowsTenant(tenant)) {
      throw aadError(400, 'invalid_tenant', 90002, `Tenant '${tenant}' not found.`);
    }
    const base = `${request.baseUrl}/${tenant}`;
    return json({
      token_endpoint: `${base}/oauth2/v2.0/token`,
      token_endpoint_auth_methods_supported: ['client_secret_post', 'private_key_jwt', 'client_secret_basic'],
      jwks_uri: `${request.baseUrl}/${tenant}/discovery/v2.0/keys`,
      response_modes_supported: ['query', 'fragment', 'form_post'],
      subject_types_supported: ['pairwise'],
      id_token_signing_alg_values_supported: ['RS256'],
      response_types_supported: ['code', 'id_token', 'code id_token', 'id_token token'],
      scopes_supported: ['openid', 'profile', 'email', 'offline_access'],
      issuer: `${base}/v2.0`,
      authorization_endpoint: `${base}/oauth2/v2.0/authorize`,
      device_authorization_endpoint: `${base}/oauth2/v2.0/devicecode`,
      end_session_endpoint: `${base}/oauth2/v2.0/logout`,
      tenant_region_scope: 'NA',
      cloud_instance_name: 'microsoftonline.com',
    });
  }

  /** `POST /{tenant}/oauth2/v2.0/token` (form-encoded client credentials). */
  token(request: EmulatorRequest): EmulatorResponse {
    const tenant = request.params.tenant ?? '';
    const form = (typeof request.body === 'object' && request.body !== null ? request.body : {}) as Record<
      string,
      string | undefined
    >;
    if (form.grant_type !== 'client_credentials') {
      throw aadError(
        400,
        'unsupported_grant_type',
        70003,
        `The app requested an unsupported grant type '${form.grant_type ?? ''}'.`,
      );
    }
    if (!this.#knowsTenant(tenant)) {
      throw aadError(
        400,
        'invalid_request',
        90002,
        `Tenant '${tenant}' not found. Check to make sure you have the correct tenant ID.`,
      );
    }
    const principal = this.#principals.find(
      (each) => each.tenantId === tenant && each.clientId === form.client_id,
    );
    if (!principal) {
      throw aadError(
        400,
        'unauthorized_client',
        700016,
        `Application with identifier '${form.client_id ?? ''}' was not found in the directory '${tenant}'.`,
      );
    }
    if (form.client_secret !== principal.clientSecret || this.#secretsRevoked()) {
      throw aadError(
        401,
        'invalid_client',
        7000215,
        `Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '${principal.clientId}'.`,
      );
    }
    if (!form.scope?.endsWith('/.default')) {
      throw aadError(
        400,
        'invalid_scope',
        1002012,
        `The provided value for scope ${form.scope ?? ''} is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI).`,
      );
    }
    const accessToken = randomBytes(32).toString('base64url');
    this.#tokens.set(accessToken, {
      clientId: principal.clientId,
      expiresAt: this.#clock() + TOKEN_LIFETIME_SECONDS * 1000,
    });
    return json({
      token_type: 'Bearer',
      expires_in: TOKEN_LIFETIME_SECONDS,
      ext_expires_in: TOKEN_LIFETIME_SECONDS,
      access_token: accessToken,
    });
  }

  /**
   * Whether the request carries a live token this directory issued; a revoked secret also ends
   * its tokens, so a refused key shows at once.
   */
  isAuthorized(request: EmulatorRequest): boolean {
    const header = request.headers.authorization ?? '';
    const token = header.startsWith('Bearer ') ? this.#tokens.get(header.slice('Bearer '.length)) : undefined;
    return token !== undefined && token.expiresAt > this.#clock() && !this.#secretsRevoked();
  }
}
