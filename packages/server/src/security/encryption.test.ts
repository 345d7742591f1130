import { describe, expect, it } from 'vitest';
import {
  aesKeyNameOf,
  createEncryption,
  EncryptionError,
  generateAesKey,
  generateAesSecret,
} from './encryption.js';
import { generateToken, hashToken } from './tokens.js';

describe('createEncryption', () => {
  const key1 = { type: 'aes' as const, name: 'key1', secret: generateAesSecret() };
  const key2 = { type: 'aes' as const, name: 'key2', secret: generateAesSecret() };

  it('round-trips with AES-GCM and hides the plaintext', () => {
    const encryption = createEncryption([key1]);
    const stored = encryption.encrypt('{"api_key":"s3cret"}');
    expect(stored).toMatch(/^enc:aes:key1:[A-Za-z0-9+/=]+$/);
    expect(stored).not.toContain('s3cret');
    expect(encryption.encrypt('same')).not.toBe(encryption.encrypt('same'));
    expect(encryption.decrypt(stored)).toBe('{"api_key":"s3cret"}');
  });

  it('uses identity encryption without keys and passes plain values through', () => {
    const encryption = createEncryption([]);
    const stored = encryption.encrypt('hello: world');
    expect(stored).toBe(`enc:identity:noname:${Buffer.from('hello: world').toString('base64')}`);
    expect(encryption.decrypt(stored)).toBe('hello: world');
    expect(encryption.decrypt('plain text')).toBe('plain text');
  });

  it('rotates: the first key encrypts, older keys still decrypt', () => {
    const old = createEncryption([key1]).encrypt('old secret');
    const rotated = createEncryption([key2, key1]);
    expect(rotated.decrypt(old)).toBe('old secret');
    expect(rotated.encrypt('new')).toMatch(/^enc:aes:key2:/);
  });

  it('names a missing key and detects a wrong secret', () => {
    const stored = createEncryption([key1]).encrypt('x');
    expect(() => createEncryption([key2]).decrypt(stored)).toThrow(
      /key "key1": no such key.*configured: "key2"/,
    );
    const wrong = createEncryption([{ type: 'aes', name: 'key1', secret: generateAesSecret() }]);
    expect(() => wrong.decrypt(stored)).toThrow(EncryptionError);
    expect(() => wrong.decrypt(stored)).toThrow(/not the one it was encrypted with/);
  });

  it('says which key encrypts and which AES keys it has', () => {
    expect(createEncryption([key2, key1]).encryptingKey).toEqual({ type: 'aes', name: 'key2' });
    expect(createEncryption([key2, key1]).aesKeyNames).toEqual(['key2', 'key1']);
    expect(createEncryption([]).encryptingKey).toEqual({ type: 'identity', configured: false });
    expect(createEncryption([{ type: 'identity' }, key1]).encryptingKey).toEqual({
      type: 'identity',
      configured: true,
    });
  });

  it('reads the AES key name of a stored value', () => {
    expect(aesKeyNameOf(createEncryption([key1]).encrypt('x'))).toBe('key1');
    expect(aesKeyNameOf(createEncryption([]).encrypt('x'))).toBeNull();
    expect(aesKeyNameOf('plain text')).toBeNull();
  });

  it('generates keys with distinct names and 32-byte secrets', () => {
    const [a, b] = [generateAesKey(), generateAesKey()];
    expect(a.name).not.toBe(b.name);
    expect(createEncryption([a]).decrypt(createEncryption([a, b]).encrypt('y'))).toBe('y');
  });

  it('rejects a secret that is not 32 bytes of base64', () => {
    expect(() =>
      createEncryption([{ type: 'aes', name: 'short', secret: Buffer.alloc(16).toString('base64') }]),
    ).toThrow(/"short": secret must be base64 of 32 bytes/);
  });
});

describe('tokens', () => {
  it('generates UUID tokens and hashes them with sha256', () => {
    const token = generateToken();
    expect(token).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
