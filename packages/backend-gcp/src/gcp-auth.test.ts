import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type GcpEmulator, startGcpEmulator } from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  accessTokenSource,
  createServiceAccountClient,
  GOOGLE_TOKEN_URL,
  parseServiceAccountKey,
  readServiceAccountKeyFile,
} from './gcp-auth.js';

let gcp: GcpEmulator;
let workDirectory: string;

beforeAll(async () => {
  gcp = await startGcpEmulator({ regions: ['us-central1'] });
  workDirectory = await mkdtemp(path.join(tmpdir(), 'gcp-auth-'));
});

afterAll(async () => {
  await gcp?.close();
  if (workDirectory) await rm(workDirectory, { recursive: true, force: true });
});

describe('service-account tokens', () => {
  it("exchanges the signed assertion at the key's token_uri and calls Compute with the token", async () => {
    const key = parseServiceAccountKey(JSON.stringify(gcp.serviceAccountJson()), 'key.json');
    expect(key.token_uri).toBe(gcp.tokenUrl);
    const token = await accessTokenSource(createServiceAccountClient(key))();
    const answer = await fetch(`${gcp.computeUrl}/projects/${gcp.project}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(answer.status).toBe(200);
    // Without the token the emulator refuses, so the 200 above is the token's doing.
    expect((await fetch(`${gcp.computeUrl}/projects/${gcp.project}`)).status).toBe(401);
  });

  it("fails with the token endpoint's answer when the key is not the account's", async () => {
    const other = await startGcpEmulator({ regions: ['us-central1'] });
    try {
      // Another account's private key, this emulator's token_uri: the signature does not verify.
      const key = parseServiceAccountKey(
        JSON.stringify({ ...gcp.serviceAccountJson(), private_key: other.serviceAccountJson().private_key }),
        'key.json',
      );
      await expect(accessTokenSource(createServiceAccountClient(key))()).rejects.toThrow(
        /invalid_grant|Invalid JWT/,
      );
    } finally {
      await other.close();
    }
  });

  it("defaults token_uri to Google's", () => {
    const { token_uri: _unused, ...withoutTokenUri } = gcp.serviceAccountJson();
    expect(parseServiceAccountKey(JSON.stringify(withoutTokenUri), 'key.json').token_uri).toBe(
      GOOGLE_TOKEN_URL,
    );
  });

  it('names the source and the field of a bad key', async () => {
    const { client_email: _unused, ...withoutEmail } = gcp.serviceAccountJson();
    expect(() => parseServiceAccountKey(JSON.stringify(withoutEmail), 'key.json')).toThrow(
      'key.json: field "client_email" is missing',
    );
    expect(() =>
      parseServiceAccountKey(
        JSON.stringify({ ...gcp.serviceAccountJson(), type: 'authorized_user' }),
        'creds.data',
      ),
    ).toThrow(/^creds\.data: field "type" /);
    expect(() =>
      parseServiceAccountKey(JSON.stringify({ ...gcp.serviceAccountJson(), private_key: 'abc' }), 'key.json'),
    ).toThrow('key.json: field "private_key" is not a PEM private key');
    expect(() => parseServiceAccountKey('{not json', 'key.json')).toThrow(
      /^key\.json: is not a JSON service-account key/,
    );
    const file = path.join(workDirectory, 'missing.json');
    await expect(readServiceAccountKeyFile(file)).rejects.toThrow(`${file}: cannot be read`);
    const written = path.join(workDirectory, 'key.json');
    await writeFile(written, JSON.stringify(gcp.serviceAccountJson()));
    expect((await readServiceAccountKeyFile(written)).client_email).toBe(gcp.serviceAccount.email);
  });
});
