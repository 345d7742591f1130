import { generateKeyPairSync } from 'node:crypto';
import { request } from 'node:http';
import type { Socket } from 'node:net';
import ssh2, { type Client, type ClientChannel } from 'ssh2';

export interface ClientKey {
  /** PKCS#1 PEM, as OpenSSH and ssh2 read it. */
  privateKey: string;
  /** `ssh-rsa AAAA… comment`, an authorized_keys line. */
  publicLine: string;
}

/** An RSA key pair made with node:crypto; the public line is built by hand (RFC 4253 `ssh-rsa`). */
export function generateClientKey(comment = 'test'): ClientKey {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = publicKey.export({ format: 'jwk' });
  if (jwk.e === undefined || jwk.n === undefined) throw new Error('an RSA public key has e and n');
  const blob = Buffer.concat([
    sshString(Buffer.from('ssh-rsa')),
    sshMpint(Buffer.from(jwk.e, 'base64url')),
    sshMpint(Buffer.from(jwk.n, 'base64url')),
  ]);
  return {
    privateKey: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
    publicLine: `ssh-rsa ${blob.toString('base64')} ${comment}`,
  };
}

function sshString(bytes: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

/** A positive mpint: a leading zero byte when the high bit is set, so it does not read as negative. */
function sshMpint(unsignedBigEndian: Buffer): Buffer {
  const first = unsignedBigEndian[0] ?? 0;
  return sshString(first & 0x80 ? Buffer.concat([Buffer.from([0]), unsignedBigEndian]) : unsignedBigEndian);
}

/** An answer to the upgrade request other than 101. */
export class UpgradeRefusedError extends Error {
  constructor(
    readonly statusCode: number,
    readonly body: string,
  ) {
    super(`upgrade refused with ${statusCode}: ${body}`);
  }
}

/** `GET /api/ssh` with `Upgrade: <protocol>`; resolves with the socket once the runner switched protocols. */
export function openSshUpgrade(
  runnerUrl: string,
  protocol = 'ssh',
  headers: Record<string, string> = {},
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const upgrade = request(new URL('/api/ssh', runnerUrl), {
      headers: { ...headers, Connection: 'Upgrade', Upgrade: protocol },
    });
    upgrade.once('upgrade', (response, socket, head) => {
      if (response.headers.upgrade !== 'ssh') {
        socket.destroy();
        reject(new Error(`101 with upgrade header ${response.headers.upgrade}`));
        return;
      }
      if (head.length > 0) socket.unshift(head);
      resolve(socket);
    });
    upgrade.once('response', (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      response.once('end', () => reject(new UpgradeRefusedError(response.statusCode ?? 0, body)));
    });
    upgrade.once('error', reject);
    upgrade.end();
  });
}

/** An ssh2 client logged in over the runner's upgraded socket. */
export function connectSsh(runnerUrl: string, privateKey: string): Promise<Client> {
  return openSshUpgrade(runnerUrl).then(
    (socket) =>
      new Promise((resolve, reject) => {
        const client = new ssh2.Client();
        client.once('ready', () => resolve(client));
        client.once('error', reject);
        client.connect({ sock: socket, username: 'root', privateKey });
      }),
  );
}

export interface CommandResult {
  stdout: string;
  stderr: string;
  code: number | undefined;
  signal: string | undefined;
}

/** Runs `command` (a shell when undefined) on a session channel, writing `stdin` then EOF. */
export function runOverSsh(
  client: Client,
  command: string | undefined,
  options: { stdin?: string; pty?: boolean } = {},
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const onChannel = (error: Error | undefined, channel: ClientChannel) => {
      if (error) {
        reject(error);
        return;
      }
      const result: CommandResult = { stdout: '', stderr: '', code: undefined, signal: undefined };
      channel.on('data', (chunk: Buffer) => {
        result.stdout += chunk.toString();
      });
      channel.stderr.on('data', (chunk: Buffer) => {
        result.stderr += chunk.toString();
      });
      channel.once('exit', (code: number | null, signal?: string) => {
        result.code = code ?? undefined;
        result.signal = signal;
      });
      channel.once('close', () => resolve(result));
      channel.end(options.stdin);
    };
    const pty = options.pty ? { term: 'xterm', rows: 30, cols: 100 } : false;
    if (command === undefined) {
      if (pty === false) client.shell(false, onChannel);
      else client.shell(pty, onChannel);
    } else {
      client.exec(command, { pty }, onChannel);
    }
  });
}

/** The OpenSSH ProxyCommand of the interoperability test: upgrades `GET /api/ssh` and joins stdio to the socket. */
export function proxyCommandScript(runnerUrl: string): string {
  return `
const { request } = require('node:http');
const upgrade = request(new URL('/api/ssh', ${JSON.stringify(runnerUrl)}), {
  headers: { Connection: 'Upgrade', Upgrade: 'ssh' },
});
upgrade.once('upgrade', (_response, socket, head) => {
  process.stdout.write(head);
  socket.pipe(process.stdout);
  process.stdin.pipe(socket);
  socket.once('close', () => process.exit(0));
});
upgrade.once('response', (response) => {
  process.stderr.write('upgrade refused: ' + response.statusCode + '\\n');
  process.exit(1);
});
upgrade.end();
`;
}
