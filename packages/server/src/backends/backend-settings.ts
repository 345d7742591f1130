/**
 * The server's settings for backends and their offers: which credentials and endpoints API
 * requests may use, how long providers are waited for, how many offers a launch tries, and where
 * the price catalog comes from.
 */
import {
  type Environment,
  flagVariable,
  integerVariable,
  secondsVariableAsMs,
  urlVariable,
} from '../environment-variables.js';

export const DEFAULT_MAX_OFFERS_TRIED = 25;
/** `DSTACK_SERVER_OFFERS_DEADLINE` when unset: seconds a plan waits for one backend's offers. */
export const DEFAULT_OFFERS_DEADLINE_SECONDS = 10;
/** `DSTACK_SERVER_BACKEND_VALIDATION_DEADLINE` when unset: seconds backends/create waits for the provider. */
export const DEFAULT_BACKEND_VALIDATION_DEADLINE_SECONDS = 5;

export interface BackendSettings {
  /** `DSTACK_SERVER_MAX_OFFERS_TRIED`: how many offers one launch tries before it gives up. Default 25. */
  maxOffersTried: number;
  /**
   * `DSTACK_SERVER_OFFERS_DEADLINE`: how long a plan waits for a backend's offers, in milliseconds
   * (the variable is in seconds). A backend that answers later (a slow marketplace) is left out of
   * the plan with a warning. Default 10 s.
   */
  offersDeadlineMs: number;
  /**
   * `GPUHUNT_CATALOG_URL` (the variable gpuhunt reads): the base URL of gpuhunt's v3 catalog
   * layout that AWS and GCP offers come from; `catalog.url` in config.yml wins over it. Null:
   * gpuhunt's bucket, `GPUHUNT_CATALOG_URL` of `@dstack/catalog`.
   */
  catalogUrl: string | null;
  /**
   * Whether backends may use creds of type `default` (the server's own environment); false when
   * `DSTACK_DEFAULT_CREDS_DISABLED` is set.
   */
  defaultCredsEnabled: boolean;
  /**
   * `DSTACK_SERVER_ALLOW_DEFAULT_CREDS`: whether `backends/create|update` requests may use creds
   * of type `default`, the server's own cloud identity (any project admin would then act as the
   * server in the cloud). config.yml may, unless `DSTACK_DEFAULT_CREDS_DISABLED`. Default false.
   */
  allowDefaultCredsInApi: boolean;
  /**
   * `DSTACK_SERVER_ALLOW_CUSTOM_BACKEND_ENDPOINTS`: whether `backends/create|update` requests may
   * point a backend at custom endpoints (`endpoint_url`, a GCP key's `token_uri`); the server then
   * connects where the request says. config.yml always may. Default false.
   */
  allowCustomEndpoints: boolean;
  /**
   * `DSTACK_SERVER_BACKEND_VALIDATION_DEADLINE`: how long `backends/create|update` waits for the
   * provider while checking a config, in milliseconds (the variable is in seconds). Default 5 s.
   */
  validationDeadlineMs: number;
}

export function readBackendSettings(env: Environment): BackendSettings {
  return {
    maxOffersTried: integerVariable(env, 'DSTACK_SERVER_MAX_OFFERS_TRIED', DEFAULT_MAX_OFFERS_TRIED, {
      min: 1,
      max: 10_000,
    }),
    offersDeadlineMs: secondsVariableAsMs(
      env,
      'DSTACK_SERVER_OFFERS_DEADLINE',
      DEFAULT_OFFERS_DEADLINE_SECONDS,
      {
        min: 1,
        max: 3600,
      },
    ),
    catalogUrl: urlVariable(env, 'GPUHUNT_CATALOG_URL'),
    defaultCredsEnabled: !flagVariable(env, 'DSTACK_DEFAULT_CREDS_DISABLED'),
    allowDefaultCredsInApi: flagVariable(env, 'DSTACK_SERVER_ALLOW_DEFAULT_CREDS'),
    allowCustomEndpoints: flagVariable(env, 'DSTACK_SERVER_ALLOW_CUSTOM_BACKEND_ENDPOINTS'),
    validationDeadlineMs: secondsVariableAsMs(
      env,
      'DSTACK_SERVER_BACKEND_VALIDATION_DEADLINE',
      DEFAULT_BACKEND_VALIDATION_DEADLINE_SECONDS,
      { min: 1, max: 600 },
    ),
  };
}
