/**
 * A real ACME server for tests: Let's Encrypt's `pebble` (Debian's package) with its mock DNS,
 * `pebble-challtestsrv`, so that pebble resolves a service's host name to the gateway under test
 * and validates http-01 there. Pebble's own TLS certificate is made here by a test CA (pebble's
 * package ships none); the certificates pebble issues chain to a root it makes at start, read from
 * its management API. `PEBBLE_VA_NOSLEEP` and `PEBBLE_WFE_NONCEREJECT=0` keep it fast and
 * deterministic (no random validation delays, no rejected nonces).
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findFreePorts } from '@dstack/shim';
import { Agent, request } from 'undici';

/**
 * Whether pebble's tests skip: it is not installed, outside CI (`.ci/run` installs Debian's
 * `pebble`, so there a missing one fails the tests instead).
 */
export const pebbleMissing: boolean =
  process.env.CI !== 'true' &&
  (await promisify(execFile)('pebble', ['-h']).then(
    () => false,
    // `pebble -h` exits 2 after printing its usage: installed.
    (error: NodeJS.ErrnoException) => error.code === 'ENOENT',
  ));

export interface PebbleOptions {
  /** A directory for its configuration and TLS certificate. */
  dir: string;
  /** The address pebble listens on, where ACME clients reach it. Default 127.0.0.1. */
  host?: string;
  /** The port pebble's http-01 validation connects to on the name's address (a gateway's: 80). */
  httpChallengePort: number;
  /** External Account Binding keys (key id → base64url HMAC key); set: accounts must have one. */
  externalAccountKeys?: Record<string, string>;
}

export interface PebbleServer {
  /** `https://{host}:{port}/dir`. */
  readonly directoryUrl: string;
  /** PEM of the test CA that signed pebble's own TLS certificate: what ACME clients must trust. */
  readonly tlsCa: string;
  /** Makes pebble's DNS answer `address` for `hostname` (A record). */
  resolve(hostname: string, address: string): Promise<void>;
  /** The root (PEM) the certificates pebble issues chain to (its management API's `/roots/0`). */
  issuingRoot(): Promise<string>;
  close(): Promise<void>;
}

/** A CA and a certificate it signed for `host` (IP) and localhost, by openssl. */
function makeTlsCertificate(dir: string, host: string): { ca: string; certificate: string; key: string } {
  const path = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=pebble test CA',
    '-keyout',
    path('ca.key'),
    '-out',
    path('ca.pem'),
  );
  openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=pebble',
    '-keyout',
    path('pebble.key'),
    '-out',
    path('pebble.csr'),
  );
  writeFileSync(path('san.ext'), `subjectAltName=IP:${host},DNS:localhost\n`);
  openssl(
    'x509',
    '-req',
    '-in',
    path('pebble.csr'),
    '-CA',
    path('ca.pem'),
    '-CAkey',
    path('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    path('san.ext'),
    '-out',
    path('pebble.pem'),
  );
  return {
    ca: readFileSync(path('ca.pem'), 'utf8'),
    certificate: path('pebble.pem'),
    key: path('pebble.key'),
  };
}

function started(
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): { child: ChildProcess; output: () => string } {
  const child = spawn(name, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-8_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return { child, output: () => output };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** Polls `probe` until it stops throwing; fails with the process's output after `timeoutMs`. */
async function waitUntilUp(
  what: string,
  probe: () => Promise<void>,
  output: () => string,
  child: ChildProcess,
): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      await probe();
      return;
    } catch (error) {
      if (child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`${what} did not start (${(error as Error).message}): ${output()}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** Starts before a port clash with another process gives up: each start draws new ports. */
const START_ATTEMPTS = 3;

export async function startPebble(options: PebbleOptions): Promise<PebbleServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startPebbleOnce(options);
    } catch (error) {
      if (attempt === START_ATTEMPTS || !(error as Error).message.includes('address already in use'))
        throw error;
    }
  }
}

async function startPebbleOnce(options: PebbleOptions): Promise<PebbleServer> {
  const host = options.host ?? '127.0.0.1';
  mkdirSync(options.dir, { recursive: true });
  const tls = makeTlsCertificate(options.dir, host);
  // Distinct: ports found one after another may be the same one (each was free when found), and
  // pebble then fails to bind the port its DNS took.
  const [acmePort, managementPort, tlsPort, dnsPort, dnsManagementPort] = await findFreePorts(5, host);

  // The mock DNS only: its own challenge servers are off (the gateway answers http-01), and it
  // answers no name it was not told (no default address), as a name whose DNS is not set up.
  const dns = started('pebble-challtestsrv', [
    '-dns01',
    `127.0.0.1:${dnsPort}`,
    '-management',
    `127.0.0.1:${dnsManagementPort}`,
    '-http01',
    '',
    '-https01',
    '',
    '-tlsalpn01',
    '',
    '-defaultIPv4',
    '',
    '-defaultIPv6',
    '',
  ]);
  const dnsUrl = `http://127.0.0.1:${dnsManagementPort}`;
  const config = join(options.dir, 'pebble-config.json');
  writeFileSync(
    config,
    JSON.stringify({
      pebble: {
        listenAddress: `${host}:${acmePort}`,
        managementListenAddress: `${host}:${managementPort}`,
        certificate: tls.certificate,
        privateKey: tls.key,
        httpPort: options.httpChallengePort,
        tlsPort,
        ocspResponderURL: '',
        externalAccountBindingRequired: options.externalAccountKeys !== undefined,
        ...(options.externalAccountKeys ? { externalAccountMACKeys: options.externalAccountKeys } : {}),
      },
    }),
  );
  const pebble = started('pebble', ['-config', config, '-dnsserver', `127.0.0.1:${dnsPort}`], {
    PEBBLE_VA_NOSLEEP: '1',
    PEBBLE_WFE_NONCEREJECT: '0',
  });
  const client = new Agent({ connect: { ca: tls.ca } });
  const directoryUrl = `https://${host}:${acmePort}/dir`;
  const managementUrl = `https://${host}:${managementPort}`;
  const close = async () => {
    await Promise.all([stop(pebble.child), stop(dns.child)]);
    await client.close();
  };
  try {
    await waitUntilUp(
      'pebble-challtestsrv',
      async () => {
        const answer = await request(`${dnsUrl}/clear-a`, {
          method: 'POST',
          body: JSON.stringify({ host: 'probe.' }),
        });
        await answer.body.dump();
      },
      dns.output,
      dns.child,
    );
    await waitUntilUp(
      'pebble',
      async () => {
        const answer = await request(directoryUrl, { dispatcher: client });
        await answer.body.dump();
        if (answer.statusCode !== 200) throw new Error(`its directory answered ${answer.statusCode}`);
      },
      pebble.output,
      pebble.child,
    );
  } catch (error) {
    await close();
    throw error;
  }

  return {
    directoryUrl,
    tlsCa: tls.ca,
    async resolve(hostname, address) {
      const answer = await request(`${dnsUrl}/add-a`, {
        method: 'POST',
        body: JSON.stringify({ host: `${hostname.replace(/\.$/, '')}.`, addresses: [address] }),
      });
      const text = await answer.body.text();
      if (answer.statusCode !== 200) throw new Error(`pebble-challtestsrv refused ${hostname}: ${text}`);
    },
    async issuingRoot() {
      const answer = await request(`${managementUrl}/roots/0`, { dispatcher: client });
      const text = await answer.body.text();
      if (answer.statusCode !== 200)
        throw new Error(`pebble's roots/0 answered ${answer.statusCode}: ${text}`);
      return text;
    },
    close,
  };
}
