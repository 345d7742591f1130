import { createPrivateKey, createPublicKey } from 'node:crypto';
import ssh2 from 'ssh2';
import { describe, expect, it } from 'vitest';
import { ed25519PublicKeyLength, generateProjectSshKeyPair } from './ssh-keys.js';

describe('generateProjectSshKeyPair', () => {
  it('makes an OpenSSH ed25519 pair whose halves belong together', () => {
    const pair = generateProjectSshKeyPair();

    expect(pair.privateKey).toMatch(/^-----BEGIN OPENSSH PRIVATE KEY-----\n/);
    expect(pair.publicKey).toMatch(/^ssh-ed25519 AAAA[A-Za-z0-9+/=]+ dstack$/);
    const parsedPrivate = ssh2.utils.parseKey(pair.privateKey);
    const parsedPublic = ssh2.utils.parseKey(pair.publicKey);
    if (parsedPrivate instanceof Error || parsedPublic instanceof Error) throw new Error('unparsable key');
    const asKey = (parsed: typeof parsedPublic) => (Array.isArray(parsed) ? parsed[0] : parsed);
    expect(asKey(parsedPrivate).getPublicSSH()).toEqual(asKey(parsedPublic).getPublicSSH());
    // Node can sign with it too: the PEM is a real private key.
    expect(() => createPublicKey(createPrivateKey(asKey(parsedPrivate).getPrivatePEM()))).not.toThrow();
  });

  it('makes a different pair each time', () => {
    expect(generateProjectSshKeyPair().publicKey).not.toBe(generateProjectSshKeyPair().publicKey);
  });

  it('never makes a malformed pair (ssh2 drops leading zero bytes of about one key in 256)', () => {
    for (let index = 0; index < 2000; index += 1) {
      const pair = generateProjectSshKeyPair();
      expect(ed25519PublicKeyLength(pair.publicKey)).toBe(32);
      expect(ssh2.utils.parseKey(pair.privateKey)).not.toBeInstanceOf(Error);
    }
  });
});

describe('ed25519PublicKeyLength', () => {
  const line = (key: Buffer) => {
    const field = (bytes: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, bytes.length]), bytes]);
    return `ssh-ed25519 ${Buffer.concat([field(Buffer.from('ssh-ed25519')), field(key)]).toString('base64')} x`;
  };

  it('reads the key length of an authorized_keys line', () => {
    expect(ed25519PublicKeyLength(line(Buffer.alloc(32, 1)))).toBe(32);
    expect(ed25519PublicKeyLength(line(Buffer.alloc(31, 1)))).toBe(31);
  });

  it('is null for other key types and broken blobs', () => {
    expect(ed25519PublicKeyLength('ssh-rsa AAAAB3NzaC1yc2E= x')).toBeNull();
    expect(ed25519PublicKeyLength('ssh-ed25519 AAAA')).toBeNull();
    expect(
      ed25519PublicKeyLength(`${line(Buffer.alloc(32, 1)).split(' ').slice(0, 2).join(' ')}AAAA`),
    ).toBeNull();
  });
});
