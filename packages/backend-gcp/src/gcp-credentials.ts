/**
 * The backend's `creds` config mapped onto `gcp-auth.ts`: where the key's text comes from
 * (`data`, or the file `filename` names), and errors that name the creds field to fix.
 */
import { readFileSync } from 'node:fs';
import {
  accessTokenSource,
  createApplicationDefaultClient,
  createServiceAccountClient,
  type GcpAccessTokenSource,
  type GcpServiceAccountKey,
  GcpServiceAccountKeyError,
  parseServiceAccountKey,
} from './gcp-auth.js';
import { type GcpCreds, invalidConfigField } from './gcp-config.js';

type ServiceAccountCreds = GcpCreds & { type: 'service_account' };

/** The field of `creds` a key problem is reported on: `data`, or `filename` when the key came from a file. */
export function keyField(creds: GcpCreds): string[] {
  return creds.type === 'service_account' && creds.data == null && creds.filename != null
    ? ['creds', 'filename']
    : ['creds', 'data'];
}

/**
 * The key's JSON text: `data`, else the file `filename` names. Throws an error naming
 * `creds.filename` when the file cannot be read, `creds.data` when neither is given.
 */
export function serviceAccountKeyText(creds: ServiceAccountCreds): string {
  if (creds.data != null) return creds.data;
  if (creds.filename == null) {
    throw invalidConfigField(keyField(creds), 'give the key file as data (its JSON) or filename');
  }
  try {
    return readFileSync(creds.filename, 'utf8');
  } catch (error) {
    throw invalidConfigField(keyField(creds), `cannot read ${creds.filename}: ${(error as Error).message}`);
  }
}

/**
 * The key of `creds`, parsed and checked; a `ServerClientError` naming `creds.data` (or
 * `creds.filename`) and the key's bad field otherwise.
 */
export function serviceAccountKeyOfCreds(creds: ServiceAccountCreds): GcpServiceAccountKey {
  const field = keyField(creds);
  try {
    return parseServiceAccountKey(serviceAccountKeyText(creds), field.join('.'));
  } catch (error) {
    if (!(error instanceof GcpServiceAccountKeyError)) throw error;
    throw invalidConfigField(field, error.problem, error);
  }
}

/** The token source of `creds`: the key's JWT client, or application default credentials. */
export function credsAccessTokenSource(creds: GcpCreds): GcpAccessTokenSource {
  return accessTokenSource(
    creds.type === 'service_account'
      ? createServiceAccountClient(serviceAccountKeyOfCreds(creds))
      : createApplicationDefaultClient(),
  );
}
