/**
 * Access tokens for GCP, the one place that parses service-account keys and talks to
 * google-auth-library, for the backend's Compute calls (through `gcp-credentials.ts`, which maps
 * the backend's `creds` onto it) and for the catalog collector. The library signs the RS256
 * assertion; its token exchange goes to the key's `token_uri` (the library itself always posts
 * to Google's URL, so an emulator's or a private endpoint's `token_uri` would be ignored without
 * the rewrite below).
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { GoogleAuth, gaxios, JWT } from 'google-auth-library';
import { z } from 'zod';

/** Where google-auth-library posts the assertion (and the `aud` it signs), whatever `token_uri` says. */
export const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';
/** The one scope dstack asks for, as gcloud does. */
export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
/** Environment variable (Google's): the path of a service-account key file. */
export const GOOGLE_APPLICATION_CREDENTIALS_ENV = 'GOOGLE_APPLICATION_CREDENTIALS';

const ServiceAccountKeySchema = z.object({
  type: z.literal('service_account'),
  // Optional: the Compute names its project in the config; the collector falls back to it.
  project_id: z.string().min(1).optional(),
  private_key_id: z.string().min(1).optional(),
  private_key: z.string().includes('PRIVATE KEY', { message: 'is not a PEM private key' }),
  client_email: z.string().min(1),
  token_uri: z.url().default(GOOGLE_TOKEN_URL),
});

/** The fields of a service-account key file (`gcloud iam service-accounts keys create`) dstack uses. */
export type GcpServiceAccountKey = z.output<typeof ServiceAccountKeySchema>;

/**
 * A key file the schema refuses: `field` names the first bad field (`client_email`,
 * `private_key`…), `problem` says what is wrong with it, the message prefixes `source`.
 */
export class GcpServiceAccountKeyError extends Error {
  override readonly name = 'GcpServiceAccountKeyError';
  readonly problem: string;
  constructor(
    readonly source: string,
    readonly field: string,
    message: string,
  ) {
    const problem = `${field ? `field "${field}" ` : ''}${message}`;
    super(`${source}: ${problem}`);
    this.problem = problem;
  }
}

/**
 * Parses the text of a service-account key file. `source` (a path, `creds.data`) prefixes the
 * error, which names the missing or malformed field.
 */
export function parseServiceAccountKey(text: string, source: string): GcpServiceAccountKey {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text: it could be a file's or a secret's content.
    throw new GcpServiceAccountKeyError(source, '', 'is not a JSON service-account key');
  }
  const parsed = ServiceAccountKeySchema.safeParse(document);
  if (!parsed.success) {
    const issue = parsed.error.issues[0] as z.core.$ZodIssue;
    const field = issue.path.join('.');
    const message = issue.code === 'invalid_type' && issue.input === undefined ? 'is missing' : issue.message;
    throw new GcpServiceAccountKeyError(source, field, message);
  }
  return parsed.data;
}

/** Reads and parses the key file at `file`; errors name the file and the field. */
export async function readServiceAccountKeyFile(file: string): Promise<GcpServiceAccountKey> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new GcpServiceAccountKeyError(file, '', `cannot be read (${(error as Error).message})`);
  }
  return parseServiceAccountKey(text, file);
}

/**
 * A transporter that sends google-auth-library's token exchange, which it always posts to
 * Google's URL, to `tokenUri` instead; the library's own transporter when `tokenUri` is Google's.
 */
function transporterFor(tokenUri: string): gaxios.Gaxios {
  const transporter = new gaxios.Gaxios();
  if (tokenUri !== GOOGLE_TOKEN_URL) {
    transporter.interceptors.request.add({
      resolved: async (config) => {
        if (String(config.url) === GOOGLE_TOKEN_URL) config.url = new URL(tokenUri);
        return config;
      },
    });
  }
  return transporter;
}

/**
 * google-auth-library's JWT client for `key` with the cloud-platform scope. Its token exchange
 * goes to `key.token_uri`.
 */
export function createServiceAccountClient(key: GcpServiceAccountKey): JWT {
  return new JWT({
    email: key.client_email,
    key: key.private_key,
    keyId: key.private_key_id,
    scopes: [CLOUD_PLATFORM_SCOPE],
    transporter: transporterFor(key.token_uri),
  });
}

/**
 * Application default credentials (`GOOGLE_APPLICATION_CREDENTIALS`, gcloud's user credentials,
 * the metadata server) with the cloud-platform scope. When they are a service-account key file
 * whose `token_uri` is not Google's, its exchange is sent there too.
 */
export function createApplicationDefaultClient(): GoogleAuth {
  return new GoogleAuth({
    scopes: [CLOUD_PLATFORM_SCOPE],
    clientOptions: { transporter: transporterFor(applicationDefaultKeyTokenUri()) },
  });
}

/**
 * The `token_uri` of the key file `GOOGLE_APPLICATION_CREDENTIALS` names; Google's when the
 * variable is unset or the file is not a readable service-account key (the library reports that
 * itself, or uses other credentials).
 */
function applicationDefaultKeyTokenUri(): string {
  const file = process.env[GOOGLE_APPLICATION_CREDENTIALS_ENV];
  if (!file) return GOOGLE_TOKEN_URL;
  try {
    return parseServiceAccountKey(readFileSync(file, 'utf8'), file).token_uri;
  } catch {
    return GOOGLE_TOKEN_URL;
  }
}

/**
 * The token endpoint answered the exchange with an OAuth error (`invalid_grant`…): the key is
 * refused. Other failures (no answer, an answer that is not OAuth's) are plain errors.
 */
export class GcpTokenRefusedError extends Error {
  override readonly name = 'GcpTokenRefusedError';
}

/** Something that gives a current bearer token (refreshed by the client before it expires). */
export type GcpAccessTokenSource = () => Promise<string>;

/**
 * A token source over `client`: each call answers the cached token or exchanges a new one. A
 * failed exchange is an error with the token endpoint's own words (`invalid_grant: Invalid JWT
 * Signature.`) and the library's error as its cause.
 */
export function accessTokenSource(client: JWT | GoogleAuth): GcpAccessTokenSource {
  const account = client instanceof JWT ? client.email : 'application default credentials';
  return async () => {
    let answer: string | null | undefined | { token?: string | null };
    try {
      answer = await client.getAccessToken();
    } catch (error) {
      const message = `GCP token exchange for ${account} failed: ${describeTokenError(error)}`;
      if (oauthErrorOf(error)) throw new GcpTokenRefusedError(message, { cause: error });
      throw new Error(message, { cause: error });
    }
    const token = typeof answer === 'object' && answer !== null ? answer.token : answer;
    if (!token) throw new Error(`GCP token exchange for ${account} answered no access token`);
    return token;
  };
}

/** The OAuth error the token endpoint answered (`{error, error_description}`), if it answered one. */
function oauthErrorOf(error: unknown): { error: string; error_description?: string } | undefined {
  const data = (error as { response?: { data?: { error?: unknown; error_description?: string } } })?.response
    ?.data;
  return typeof data?.error === 'string'
    ? (data as { error: string; error_description?: string })
    : undefined;
}

/** The token endpoint's `error` and `error_description`, else the error's message. */
function describeTokenError(error: unknown): string {
  const data = oauthErrorOf(error);
  if (data) return `${data.error}${data.error_description ? `: ${data.error_description}` : ''}`;
  return error instanceof Error ? error.message : String(error);
}
