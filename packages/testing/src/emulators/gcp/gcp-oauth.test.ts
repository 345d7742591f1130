import { createSign, generateKeyPairSync } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { GcpEmulator } from './gcp-emulator.js';
import { CLOUD_PLATFORM_SCOPE, compute, jwtClient, startTestEmulator } from './gcp-emulator.test.helpers.js';

/** A JWT as Python's GAPIC clients sign it (`always_use_jwt_access`): kid, iss = sub, a scope, one hour. */
function selfSignedJwt(email: string, keyId: string, privateKey: string, offsetSeconds = 0): string {
  const now = Math.floor(Date.now() / 1000) + offsetSeconds;
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const signed = `${encode({ alg: 'RS256', typ: 'JWT', kid: keyId })}.${encode({ iss: email, sub: email, scope: CLOUD_PLATFORM_SCOPE, iat: now, exp: now + 3600 })}`;
  const signature = createSign('RSA-SHA256').update(signed).sign(privateKey).toString('base64url');
  return `${signed}.${signature}`;
}

let emulator: GcpEmulator | undefined;
afterEach(async () => {
  await emulator?.close();
  emulator = undefined;
});

describe('the OAuth token endpoint', () => {
  it('exchanges the service account JWT google-auth-library signs for a token Compute accepts', async () => {
    const started = await startTestEmulator();
    emulator = started.emulator;
    const key = emulator.serviceAccountJson();
    expect(key).toMatchObject({
      type: 'service_account',
      project_id: emulator.project,
      token_uri: `${emulator.url}/token`,
      client_email: `dstack@${emulator.project}.iam.gserviceaccount.com`,
    });
    expect(key.private_key).toMatch(/^-----BEGIN PRIVATE KEY-----/);

    const client = jwtClient(key);
    const { token } = await client.getAccessToken();
    expect(token).toMatch(/^ya29\./);
    const [exchange] = emulator.server.requestsTo('oauth.token');
    expect(exchange?.body).toMatchObject({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer' });

    // The client library's own request signing works against Compute.
    const zones = await client.request<{ items: { name: string }[] }>({
      url: `${emulator.computeUrl}/projects/${emulator.project}/zones`,
    });
    expect(zones.data.items.map((zone) => zone.name)).toContain('us-central1-a');
  });

  it('a key the emulator does not know is invalid_grant, as google-auth-library reports it', async () => {
    const started = await startTestEmulator();
    emulator = started.emulator;
    const { privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    const wrongKey = { ...emulator.serviceAccountJson(), private_key: privateKey };
    await expect(jwtClient(wrongKey).getAccessToken()).rejects.toThrow(
      /invalid_grant: Invalid JWT Signature\./,
    );

    const unknownAccount = {
      ...emulator.serviceAccountJson(),
      client_email: 'other@elsewhere.iam.gserviceaccount.com',
    };
    await expect(jwtClient(unknownAccount).getAccessToken()).rejects.toThrow(
      /invalid_grant: Invalid grant: account not found/,
    );
  });

  it('accepts a JWT the service account signed itself (no token exchange), as GAPIC clients send', async () => {
    const started = await startTestEmulator();
    emulator = started.emulator;
    const key = emulator.serviceAccountJson();
    const zones = `zones`;
    const good = selfSignedJwt(key.client_email, key.private_key_id, key.private_key);
    await expect(compute(emulator, good, 'GET', zones)).resolves.toMatchObject({ status: 200 });
    expect(emulator.server.requestsTo('oauth.token')).toHaveLength(1); // only startTestEmulator's exchange

    const { privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    const forged = selfSignedJwt(key.client_email, key.private_key_id, privateKey);
    await expect(compute(emulator, forged, 'GET', zones)).resolves.toMatchObject({ status: 401 });
    const stale = selfSignedJwt(key.client_email, key.private_key_id, key.private_key, -7200);
    await expect(compute(emulator, stale, 'GET', zones)).resolves.toMatchObject({ status: 401 });
  });

  it('Compute and Billing need a valid bearer token: none, a made-up one and an expired one are 401', async () => {
    const started = await startTestEmulator();
    emulator = started.emulator;
    const { token, clock } = started;
    await expect(compute(emulator, token, 'GET', 'zones')).resolves.toMatchObject({ status: 200 });
    const made = await compute(emulator, 'ya29.made-up', 'GET', 'zones');
    expect(made).toMatchObject({
      status: 401,
      body: { error: { code: 401, status: 'UNAUTHENTICATED', errors: [{ reason: 'authError' }] } },
    });
    const response = await fetch(`${emulator.url}/v1/services/6F81-5844-456A/skus`);
    expect(response.status).toBe(401);

    clock.advance(3600_000);
    await expect(compute(emulator, token, 'GET', 'zones')).resolves.toMatchObject({ status: 401 });
  });

  it('the INVALID_GRANT fault revokes the key: no new token, and issued ones are refused', async () => {
    const started = await startTestEmulator();
    emulator = started.emulator;
    emulator.addFault({ code: 'INVALID_GRANT' });
    await expect(jwtClient(emulator.serviceAccountJson()).getAccessToken()).rejects.toThrow(/invalid_grant/);
    await expect(compute(emulator, started.token, 'GET', 'zones')).resolves.toMatchObject({ status: 401 });
    emulator.clearFaults();
    await expect(jwtClient(emulator.serviceAccountJson()).getAccessToken()).resolves.toMatchObject({
      token: expect.stringMatching(/^ya29\./),
    });
  });
});
