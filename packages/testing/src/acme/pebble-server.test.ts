/**
 * The gateway's ACME client and the gateway agent's certificates against a real ACME server
 * (pebble, with its mock DNS): a certificate issued for a name whose http-01 challenge is
 * answered, its chain verified up to pebble's root; a name whose DNS does not point at us fails
 * with the reason; the gateway agent obtains a service's certificate itself, serves HTTPS with it
 * and redirects plain HTTP, and says why another name has none.
 */
import { generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type GatewayHealth, GatewayHealthSchema, type GatewayState } from '@dstack/core/agent-protocol';
import { AcmeClient, AcmeError, findFreePort, type GatewayServer, startGateway } from '@dstack/shim';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PebbleServer, pebbleMissing, startPebble } from './pebble-server.js';

/** The gateway agent's token, which its management API requires. */
const API_TOKEN = 'gateway-api-token';

function certificatesOf(chain: string): X509Certificate[] {
  return (chain.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map(
    (pem) => new X509Certificate(pem),
  );
}

/** An HTTPS client that resolves every name to 127.0.0.1 and trusts only `ca`. */
function clientTrusting(ca: string): Agent {
  return new Agent({
    connect: {
      ca,
      lookup: (_hostname, options, callback) =>
        options.all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4),
    },
  });
}

describe.skipIf(pebbleMissing)('ACME certificates from pebble', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dstack-acme-'));
  let pebble: PebbleServer;
  let challengePort: number;
  const accountKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;

  beforeAll(async () => {
    challengePort = await findFreePort();
    pebble = await startPebble({ dir: join(dir, 'pebble'), httpChallengePort: challengePort });
  }, 60_000);

  afterAll(async () => {
    await pebble?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('issues a certificate for a name whose http-01 challenge is answered, chained to pebble’s root; a name not pointing here fails with why', async () => {
    const answers = new Map<string, string>();
    const responder = createServer((req, res) => {
      const token = req.url?.replace('/.well-known/acme-challenge/', '') ?? '';
      const answer = answers.get(token);
      res.writeHead(answer === undefined ? 404 : 200).end(answer);
    });
    await new Promise<void>((resolve) => responder.listen(challengePort, '127.0.0.1', resolve));
    const client = new AcmeClient({
      directoryUrl: pebble.directoryUrl,
      accountKey,
      caCertificates: pebble.tlsCa,
    });
    try {
      await pebble.resolve('direct.acme.test', '127.0.0.1');
      const key = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
      const chain = certificatesOf(await client.issueCertificate('direct.acme.test', key, answers));
      const root = new X509Certificate(await pebble.issuingRoot());
      const [leaf, ...intermediates] = chain;
      expect(leaf?.checkHost('direct.acme.test')).toBe('direct.acme.test');
      expect(leaf?.checkPrivateKey(key)).toBe(true);
      // Each certificate is signed by the next, the last by pebble's root.
      const issuers = [...intermediates, root];
      chain.forEach((certificate, index) => {
        expect(certificate.verify((issuers[index] as X509Certificate).publicKey)).toBe(true);
      });
      expect(answers.size).toBe(0);

      // No DNS record: the reason names the host and says what to check.
      const failed = await client.issueCertificate('nowhere.acme.test', key, answers).then(
        () => null,
        (error: unknown) => error,
      );
      expect(failed).toBeInstanceOf(AcmeError);
      expect((failed as AcmeError).message).toMatch(
        /http-01 challenge for nowhere\.acme\.test failed: .*could not resolve.*make sure nowhere\.acme\.test resolves to this gateway/,
      );
    } finally {
      await client.close();
      await new Promise((resolve) => responder.close(resolve));
    }
  }, 60_000);

  it('binds the account to an external account when the ACME server requires one', async () => {
    const hmacKey = randomBytes(32).toString('base64url');
    const bound = await startPebble({
      dir: join(dir, 'pebble-eab'),
      httpChallengePort: challengePort,
      externalAccountKeys: { 'kid-1': hmacKey },
    });
    const answers = new Map<string, string>();
    const responder = createServer((req, res) => {
      const answer = answers.get(req.url?.replace('/.well-known/acme-challenge/', '') ?? '');
      res.writeHead(answer === undefined ? 404 : 200).end(answer);
    });
    await new Promise<void>((resolve) => responder.listen(challengePort, '127.0.0.1', resolve));
    const clientWith = (externalAccount: { kid: string; hmacKey: string } | null) =>
      new AcmeClient({
        directoryUrl: bound.directoryUrl,
        accountKey: generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey,
        caCertificates: bound.tlsCa,
        externalAccount,
      });
    const key = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    try {
      await bound.resolve('bound.acme.test', '127.0.0.1');
      const unbound = clientWith(null);
      const refused = await unbound
        .issueCertificate('bound.acme.test', key, answers)
        .catch((error: Error) => error);
      await unbound.close();
      expect(String(refused)).toContain('externalAccountRequired');
      const withBinding = clientWith({ kid: 'kid-1', hmacKey });
      const chain = certificatesOf(await withBinding.issueCertificate('bound.acme.test', key, answers));
      await withBinding.close();
      expect(chain[0]?.checkHost('bound.acme.test')).toBe('bound.acme.test');
    } finally {
      await new Promise((resolve) => responder.close(resolve));
      await bound.close();
    }
  }, 60_000);

  it('the gateway agent obtains a service’s certificate, serves HTTPS with it, redirects HTTP, and reports a name it could not get', async () => {
    let gateway: GatewayServer | null = null;
    const logged: string[] = [];
    const replica = createServer((_req, res) => res.end('hello over acme\n'));
    await new Promise<void>((resolve) => replica.listen(0, '127.0.0.1', resolve));
    const replicaUrl = `http://127.0.0.1:${(replica.address() as { port: number }).port}`;
    try {
      gateway = await startGateway({
        home: join(dir, 'gateway'),
        apiToken: API_TOKEN,
        apiPort: 0,
        httpsPort: 0,
        httpPort: challengePort,
        publicHost: '127.0.0.1',
        log: (line) => logged.push(line),
      });
      await pebble.resolve('svc.acme.test', '127.0.0.1');
      const service = (hostname: string) => ({
        project: 'main',
        run_name: hostname.split('.')[0] as string,
        run_id: `run-${hostname}`,
        hostname,
        auth: false,
        https: true,
        replicas: [{ id: 'r', url: replicaUrl }],
        scales_from_zero: false,
        rate_limits: [],
      });
      const state: GatewayState = {
        certificate: null,
        acme: { directory_url: pebble.directoryUrl, ca_certificates: pebble.tlsCa, external_account: null },
        services: [service('svc.acme.test'), service('lost.acme.test')],
        token_hashes: {},
      };
      const api = `http://127.0.0.1:${gateway.apiPort}`;
      const apiHeaders = { authorization: `Bearer ${API_TOKEN}` };
      const put = await request(`${api}/api/state`, {
        method: 'PUT',
        headers: apiHeaders,
        body: JSON.stringify(state),
      });
      expect(put.statusCode, await put.body.text()).toBe(200);

      let health: GatewayHealth | null = null;
      const deadline = Date.now() + 45_000;
      while (Date.now() < deadline) {
        health = GatewayHealthSchema.parse(
          await (await request(`${api}/api/healthcheck`, { headers: apiHeaders })).body.json(),
        );
        if (health.certificates.every((entry) => entry.status !== 'pending')) break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const byName = new Map(health?.certificates.map((entry) => [entry.hostname, entry]));
      expect(byName.get('svc.acme.test')?.status, JSON.stringify(health)).toBe('valid');
      expect(byName.get('lost.acme.test')).toMatchObject({ status: 'failed' });
      expect(byName.get('lost.acme.test')?.message).toMatch(
        /could not obtain a certificate for lost\.acme\.test: .*could not resolve.*make sure lost\.acme\.test resolves to this gateway/,
      );
      expect(logged.join('\n')).toContain('certificate for svc.acme.test issued');

      const client = clientTrusting(await pebble.issuingRoot());
      const getHttps = async (port: number | null) => {
        const answer = await request(`https://svc.acme.test:${port}/`, { dispatcher: client });
        return { status: answer.statusCode, body: await answer.body.text() };
      };
      expect(await getHttps(gateway.httpsPort)).toEqual({ status: 200, body: 'hello over acme\n' });

      const http = await request(`http://127.0.0.1:${challengePort}/path?q=1`, {
        headers: { host: 'svc.acme.test' },
      });
      await http.body.dump();
      expect(http.statusCode).toBe(301);
      expect(http.headers.location).toBe('https://svc.acme.test/path?q=1');
      // No certificate: plain HTTP says why instead of redirecting to an HTTPS that cannot answer.
      const lost = await request(`http://127.0.0.1:${challengePort}/`, {
        headers: { host: 'lost.acme.test' },
      });
      expect(lost.statusCode).toBe(503);
      expect(await lost.body.text()).toContain('could not obtain a certificate for lost.acme.test');

      // Restarted, the agent serves the stored certificate at once, with no ACME server asked.
      await gateway.close();
      gateway = await startGateway({
        home: join(dir, 'gateway'),
        apiToken: API_TOKEN,
        apiPort: 0,
        httpsPort: 0,
        httpPort: 0,
        publicHost: '127.0.0.1',
        log: (line) => logged.push(line),
      });
      expect(await getHttps(gateway.httpsPort)).toEqual({ status: 200, body: 'hello over acme\n' });
      await client.close();
    } finally {
      await gateway?.close();
      await new Promise((resolve) => replica.close(resolve));
    }
  }, 90_000);
});
