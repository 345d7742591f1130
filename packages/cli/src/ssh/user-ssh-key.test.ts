import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ParsedKey, utils } from 'ssh2';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensureUserSshKey } from './user-ssh-key.js';

let directory: string;

beforeEach(() => {
  directory = join(mkdtempSync(join(tmpdir(), 'dstack-ssh-key-')), 'ssh');
});

afterEach(() => {
  rmSync(join(directory, '..'), { recursive: true, force: true });
});

function parse(text: string): ParsedKey {
  const key = utils.parseKey(text);
  if (key instanceof Error) throw key;
  return Array.isArray(key) ? key[0]! : key;
}

describe('ensureUserSshKey', () => {
  it('creates an RSA key pair that ssh2 reads, the private key readable only by the user', async () => {
    const key = await ensureUserSshKey(directory);
    const privateText = readFileSync(join(directory, 'id_rsa'), 'utf8');
    const publicText = readFileSync(join(directory, 'id_rsa.pub'), 'utf8');
    expect(key.privateKeyPath).toBe(join(directory, 'id_rsa'));
    expect(key.privateKey).toBe(privateText);
    expect(privateText).toMatch(/^-----BEGIN RSA PRIVATE KEY-----\n/);
    expect(statSync(key.privateKeyPath).mode & 0o777).toBe(0o600);
    expect(publicText).toBe(`${key.publicKey}\n`);
    expect(key.publicKey).toMatch(/^ssh-rsa AAAA[A-Za-z0-9+/=]+ dstack$/);

    const privateKey = parse(privateText);
    const publicKey = parse(publicText);
    expect(publicKey.type).toBe('ssh-rsa');
    expect(publicKey.getPublicSSH().equals(privateKey.getPublicSSH())).toBe(true);
    const data = Buffer.from('what the runner signs');
    const signature = privateKey.sign(data);
    expect(signature).toBeInstanceOf(Buffer);
    expect(publicKey.verify(data, signature as Buffer)).toBe(true);
    expect(publicKey.verify(Buffer.from('something else'), signature as Buffer)).toBe(false);
  });

  it('reuses the key on later calls', async () => {
    const first = await ensureUserSshKey(directory);
    const second = await ensureUserSshKey(directory);
    expect(second).toEqual(first);
  });

  it('writes the public key again from the private one when it is missing', async () => {
    const first = await ensureUserSshKey(directory);
    rmSync(join(directory, 'id_rsa.pub'));
    const second = await ensureUserSshKey(directory);
    expect(second.publicKey).toBe(first.publicKey);
    expect(readFileSync(join(directory, 'id_rsa.pub'), 'utf8')).toBe(`${first.publicKey}\n`);
  });

  it('writes files that OpenSSH reads (ssh-keygen)', async (context) => {
    if (spawnSync('ssh-keygen', ['-?']).error) {
      context.skip('ssh-keygen is not installed');
      return;
    }
    const key = await ensureUserSshKey(directory);
    const fingerprint = (path: string) => {
      const result = spawnSync('ssh-keygen', ['-l', '-f', path], { encoding: 'utf8' });
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
      return result.stdout;
    };
    const ofPublic = fingerprint(`${key.privateKeyPath}.pub`);
    expect(ofPublic).toMatch(/^3072 SHA256:\S+ dstack \(RSA\)\n$/);
    // The private key gives the same fingerprint: the two files are one pair.
    expect(fingerprint(key.privateKeyPath).split(' ')[1]).toBe(ofPublic.split(' ')[1]);
  });
});
