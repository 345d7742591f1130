import { createPrivateKey, createPublicKey } from 'node:crypto';
import ssh2 from 'ssh2';
import { describe, expect, it } from 'vitest';
import { generateProjectSshKeyPair } from './ssh-keys.js';

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

  it('never makes a pair ssh2 cannot read (its own generator breaks about one key in 256)', () => {
    for (let index = 0; index < 2000; index += 1) {
      const pair = generateProjectSshKeyPair();
      expect(ssh2.utils.parseKey(pair.publicKey)).not.toBeInstanceOf(Error);
      expect(ssh2.utils.parseKey(pair.privateKey)).not.toBeInstanceOf(Error);
    }
    // 2,000 key pairs: about 1.5 s alone, several times that on a busy machine.
  }, 30_000);
});
