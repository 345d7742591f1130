import { createHash, createSign } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type OciEmulator, startOciEmulator } from './oci-emulator.js';
import { parseOciEmulatorArguments, runOciEmulatorCommand } from './oci-emulator-command.js';

/** A request signed as the OCI SDKs sign it (draft-cavage, rsa-sha256), with `tamper` applied after signing. */
async function signedFetch(
  emulator: OciEmulator,
  method: string,
  path: string,
  options: { body?: string; tamper?: (headers: Record<string, string>) => void; signed?: string[] } = {},
): Promise<Response> {
  const url = new URL(`${emulator.url}${path}`);
  const headers: Record<string, string> = { host: url.host, 'x-date': new Date().toUTCString() };
  let names = options.signed ?? ['x-date', '(request-target)', 'host'];
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(options.body));
    headers['x-content-sha256'] = createHash('sha256').update(options.body).digest('base64');
    if (!options.signed) names = [...names, 'content-length', 'content-type', 'x-content-sha256'];
  }
  const lines = names.map((name) =>
    name === '(request-target)'
      ? `(request-target): ${method.toLowerCase()} ${url.pathname}${url.search}`
      : `${name}: ${headers[name]}`,
  );
  const signature = createSign('sha256').update(lines.join('\n')).sign(emulator.user.privateKey, 'base64');
  const keyId = `${emulator.user.tenancy}/${emulator.user.user}/${emulator.user.fingerprint}`;
  headers.authorization = `Signature version="1",keyId="${keyId}",algorithm="rsa-sha256",headers="${names.join(' ')}",signature="${signature}"`;
  options.tamper?.(headers);
  const { host: _host, 'content-length': _length, ...sent } = headers;
  return fetch(url, { method, headers: sent, body: options.body });
}

describe('the OCI emulator', () => {
  it('verifies request signatures and refuses what OCI refuses with 401 NotAuthenticated', async () => {
    const emulator = await startOciEmulator();
    try {
      const tenancyPath = `/identity/us-ashburn-1/20160918/tenancies/${emulator.user.tenancy}`;
      expect((await signedFetch(emulator, 'GET', tenancyPath)).status).toBe(200);
      const body = JSON.stringify({ compartmentId: emulator.user.tenancy, name: 'c', description: 'd' });
      expect(
        (await signedFetch(emulator, 'POST', '/identity/us-ashburn-1/20160918/compartments', { body }))
          .status,
      ).toBe(200);

      const refusals = [
        await fetch(`${emulator.url}${tenancyPath}`),
        await signedFetch(emulator, 'GET', tenancyPath, {
          tamper: (headers) => {
            headers['x-date'] = new Date(Date.now() - 1000).toUTCString();
          },
        }),
        await signedFetch(emulator, 'GET', tenancyPath, { signed: ['x-date', 'host'] }),
        await signedFetch(emulator, 'POST', '/identity/us-ashburn-1/20160918/compartments', {
          body,
          signed: ['x-date', '(request-target)', 'host'],
        }),
        await signedFetch(emulator, 'GET', `${tenancyPath}?x=1`, {
          tamper: (headers) => {
            headers.authorization = headers.authorization?.replace(emulator.user.fingerprint, '00:11') ?? '';
          },
        }),
      ];
      for (const response of refusals) {
        expect(response.status).toBe(401);
        expect(await response.json()).toMatchObject({ code: 'NotAuthenticated' });
      }
      // A body other than the signed one.
      const swapped = await fetch(`${emulator.url}/identity/us-ashburn-1/20160918/compartments`, {
        method: 'POST',
        headers: Object.fromEntries(
          Object.entries(
            await (async () => {
              let captured: Record<string, string> = {};
              await signedFetch(emulator, 'POST', '/identity/us-ashburn-1/20160918/compartments', {
                body,
                tamper: (headers) => {
                  captured = { ...headers };
                },
              });
              return captured;
            })(),
          ).filter(([name]) => name !== 'host' && name !== 'content-length'),
        ),
        body: body.replace('"c"', '"x"'),
      });
      expect(swapped.status).toBe(401);
    } finally {
      await emulator.close();
    }
  });

  it('emulator oci writes a server config.yml pointing project main at it, and runs until stopped', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'oci-emulator-command-'));
    try {
      const file = join(directory, 'config.yml');
      const lines: string[] = [];
      const stop = new AbortController();
      let ready: (emulator: OciEmulator) => void = () => {};
      const started = new Promise<OciEmulator>((resolve) => {
        ready = resolve;
      });
      const running = runOciEmulatorCommand(
        ['--server-config', file, '--fault', 'OutOfHostCapacity:VM.GPU.A10.1'],
        {
          signal: stop.signal,
          log: (line) => lines.push(line),
          onReady: (emulator) => ready(emulator),
        },
      );
      const emulator = await started;
      expect(parse(await readFile(file, 'utf8'))).toEqual({
        projects: [
          {
            name: 'main',
            backends: [
              {
                type: 'oci',
                regions: ['us-ashburn-1', 'eu-frankfurt-1'],
                endpoint_url: emulator.url,
                creds: {
                  type: 'client',
                  user: emulator.user.user,
                  tenancy: emulator.user.tenancy,
                  key_content: emulator.user.privateKey,
                  fingerprint: emulator.user.fingerprint,
                  region: 'us-ashburn-1',
                },
              },
            ],
          },
        ],
      });
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      expect(lines[0]).toMatch(/^OCI emulator listening on http:\/\/127\.0\.0\.1:\d+/);
      expect(emulator.faults()).toMatchObject([{ code: 'OutOfHostCapacity', shape: 'VM.GPU.A10.1' }]);
      stop.abort();
      await running;
      expect(lines.at(-1)).toBe('Stopping (abort)');
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
    expect(() => parseOciEmulatorArguments(['--server-config', 'x', '--fault', 'Nope'])).toThrow(
      /unknown code Nope/,
    );
  });
});
