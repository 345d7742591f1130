/**
 * Oracle Cloud's own SDK clients of one backend config: an authentication provider from the
 * creds (an API key given in the config, or an OCI CLI config file on the server) that signs
 * every request (`oci-common`), and the service clients (`oci-identity`, …) of a region, pointed
 * at `endpoint_url` when set.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import {
  type AuthenticationDetailsProvider,
  ConfigFileAuthenticationDetailsProvider,
  Region,
  SimpleAuthenticationDetailsProvider,
} from 'oci-common';
import { IdentityClient } from 'oci-identity';
import type { OciConfig, OciCreds } from './oci-config.js';

/** `~/…` as the OCI CLI reads it. */
function expandHome(path: string): string {
  return path.startsWith('~/') ? `${homedir()}${path.slice(1)}` : path;
}

/** The provider that signs requests with the creds' API key. */
export function ociAuthenticationProvider(creds: OciCreds): AuthenticationDetailsProvider {
  if (creds.type === 'default') {
    return new ConfigFileAuthenticationDetailsProvider(
      expandHome(creds.file ?? '~/.oci/config'),
      creds.profile ?? 'DEFAULT',
    );
  }
  const privateKey = creds.key_content ?? readFileSync(expandHome(creds.key_file ?? ''), 'utf8');
  return new SimpleAuthenticationDetailsProvider(
    creds.tenancy,
    creds.user,
    creds.fingerprint,
    privateKey,
    creds.pass_phrase ?? null,
    Region.fromRegionId(creds.region),
  );
}

/** The tenancy the creds act for. */
export function tenancyOf(creds: OciCreds, provider: AuthenticationDetailsProvider): Promise<string> {
  return creds.type === 'client'
    ? Promise.resolve(creds.tenancy)
    : Promise.resolve(provider.getKeyId()).then((keyId) => keyId.split('/')[0] ?? '');
}

/** Identity's client for the creds, at `endpoint_url` when set. */
export function identityClient(config: Pick<OciConfig, 'creds' | 'endpoint_url'>): IdentityClient {
  const client = new IdentityClient({
    authenticationDetailsProvider: ociAuthenticationProvider(config.creds),
  });
  if (config.endpoint_url) client.endpoint = config.endpoint_url.replace(/\/+$/, '');
  return client;
}
