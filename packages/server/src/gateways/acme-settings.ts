/** Where gateways get their TLS certificates: the ACME server, the CAs it is trusted by, its account binding. */

import { readFileSync } from 'node:fs';
import { ConfigurationError } from '@dstack/core';
import { LETS_ENCRYPT_DIRECTORY_URL } from '@dstack/core/agent-protocol';
import { type Environment, stringVariable, urlVariable } from '../environment-variables.js';

export interface AcmeSettings {
  /**
   * `DSTACK_ACME_SERVER` (dstack's setting): the ACME directory URL gateways with `certificate:
   * {type: lets-encrypt}` (the default) get their certificates from. Default Let's Encrypt's
   * production directory.
   */
  server: string;
  /**
   * `DSTACK_ACME_SERVER_CA_FILE`: a PEM file of CA certificates gateways trust for the ACME
   * server's own TLS besides the system's (a private or test ACME server, e.g. pebble); the server
   * reads it at start and sends its contents. Null: the system's CAs only.
   */
  caCertificates: string | null;
  /**
   * `DSTACK_ACME_EAB_KID` and `DSTACK_ACME_EAB_HMAC_KEY` (dstack's settings): the External Account
   * Binding an ACME server may require (its key id and base64url HMAC key), set both or neither.
   * Null: none (Let's Encrypt needs none).
   */
  externalAccount: { kid: string; hmacKey: string } | null;
}

export function readAcmeSettings(env: Environment): AcmeSettings {
  return {
    server: urlVariable(env, 'DSTACK_ACME_SERVER') ?? LETS_ENCRYPT_DIRECTORY_URL,
    caCertificates: pemFileVariable(env, 'DSTACK_ACME_SERVER_CA_FILE'),
    externalAccount: externalAccountVariables(env),
  };
}

/** The PEM certificates in the file a variable names; null when unset. */
function pemFileVariable(env: Environment, name: string): string | null {
  const path = stringVariable(env, name);
  if (path === null) return null;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigurationError(`${name}: cannot read ${path} (${(error as Error).message})`, {
      path: [name],
    });
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----')) {
    throw new ConfigurationError(`${name}: ${path} holds no PEM certificate`, { path: [name] });
  }
  return text;
}

/** `DSTACK_ACME_EAB_KID` with `DSTACK_ACME_EAB_HMAC_KEY`: both, or neither. */
function externalAccountVariables(env: Environment): { kid: string; hmacKey: string } | null {
  const kid = stringVariable(env, 'DSTACK_ACME_EAB_KID');
  const hmacKey = stringVariable(env, 'DSTACK_ACME_EAB_HMAC_KEY');
  if (kid === null && hmacKey === null) return null;
  if (kid === null || hmacKey === null) {
    const [missing, other] =
      kid === null
        ? ['DSTACK_ACME_EAB_KID', 'DSTACK_ACME_EAB_HMAC_KEY']
        : ['DSTACK_ACME_EAB_HMAC_KEY', 'DSTACK_ACME_EAB_KID'];
    throw new ConfigurationError(`${missing} must be set with ${other}`, { path: [missing] });
  }
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(hmacKey)) {
    throw new ConfigurationError('DSTACK_ACME_EAB_HMAC_KEY must be base64url', {
      path: ['DSTACK_ACME_EAB_HMAC_KEY'],
    });
  }
  return { kid, hmacKey };
}
