/**
 * What a backend config may reach on the server's behalf, by where it came from
 * (`ValidateConfigOptions`). A config from an API request is any project admin's: it must not
 * make the server read its own files, connect where the user says, or act as the server's own
 * cloud identity. `config.yml` is the server admin's file and may do all three.
 */
import { ServerClientError } from '../errors.js';
import type { ValidateConfigOptions } from './configurator.js';

/** The server setting that lets API requests use creds of type `default`. */
export const ALLOW_DEFAULT_CREDS_SETTING = 'DSTACK_SERVER_ALLOW_DEFAULT_CREDS';
/** The server setting that lets API requests give custom endpoints (`endpoint_url`, …). */
export const ALLOW_CUSTOM_BACKEND_ENDPOINTS_SETTING = 'DSTACK_SERVER_ALLOW_CUSTOM_BACKEND_ENDPOINTS';

/**
 * Refuses a field naming a file on the server (e.g. GCP's `creds.filename`) in a config from the
 * API, before anything is read: only `config.yml` may name server files. `instead` is the field
 * that carries the content (`creds.data`).
 */
export function refuseServerFileFromApi(
  options: Pick<ValidateConfigOptions, 'origin'>,
  field: readonly string[],
  instead: string,
): void {
  if (options.origin !== 'api') return;
  throw new ServerClientError(
    `${field.join('.')}: a file on the server can be named only in the server's config.yml; send the file's content as ${instead}`,
    { fields: [field] },
  );
}

/**
 * Refuses `value` of `field` when it is not one of the provider's own endpoints (`defaults`,
 * compared without trailing slashes) and custom endpoints are not allowed for this config.
 * `what` names the value in the message when it is not the whole field (a key's `token_uri`).
 */
export function refuseCustomEndpoint(
  options: Pick<ValidateConfigOptions, 'customEndpointsAllowed'>,
  field: readonly string[],
  value: string | null | undefined,
  more: { defaults?: readonly string[]; what?: string } = {},
): void {
  if (value == null || options.customEndpointsAllowed) return;
  const normalized = (url: string) => url.replace(/\/+$/, '');
  if ((more.defaults ?? []).some((url) => normalized(url) === normalized(value))) return;
  throw new ServerClientError(
    `${more.what ?? field.join('.')}: a custom endpoint can be set only in the server's config.yml, or in API requests when the server runs with ${ALLOW_CUSTOM_BACKEND_ENDPOINTS_SETTING}=true`,
    { fields: [field] },
  );
}

/**
 * Refuses creds of type `default` (the server's own cloud identity) when they are not enabled
 * for this config, naming `creds.type`; `alternative` is the creds type to give instead.
 */
export function refuseDefaultCreds(
  creds: { type: string },
  options: Pick<ValidateConfigOptions, 'origin' | 'defaultCredsEnabled'>,
  alternative: string,
): void {
  if (creds.type !== 'default' || options.defaultCredsEnabled) return;
  const why =
    options.origin === 'api'
      ? `default credentials (the server's own cloud identity) are refused in API requests unless the server runs with ${ALLOW_DEFAULT_CREDS_SETTING}=true (and without DSTACK_DEFAULT_CREDS_DISABLED)`
      : 'default credentials are disabled on this server (DSTACK_DEFAULT_CREDS_DISABLED)';
  throw new ServerClientError(`creds.type: ${why}; give creds of type ${alternative}`, {
    fields: [['creds', 'type']],
  });
}
