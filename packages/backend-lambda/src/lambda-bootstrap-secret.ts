/**
 * What the shim's bootstrap needs between the launch and the first login (the agent token and
 * where the runtime comes from), kept in the provisioning data's `backend_data` until the backend
 * has logged in. Lambda has no user data, so the launch cannot hand it to the instance, and the
 * server stores `backend_data` and shows it in the API: it is sealed (AES-256-GCM) with a key
 * derived from the project's private SSH key, which only the server holds and which it gives
 * both `createInstance` and `updateProvisioningData`. `updateProvisioningData` drops it once the
 * shim is started.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { InstanceConfiguration } from '@dstack/core';

export type LambdaBootstrap = Pick<
  InstanceConfiguration,
  'agent_token' | 'agent_download_url' | 'agent_download_sha256' | 'agent_download_size'
>;

const IV_BYTES = 12;
const TAG_BYTES = 16;

function keyOf(projectPrivateKey: string): Buffer {
  return createHash('sha256').update('dstack lambda bootstrap\0').update(projectPrivateKey.trim()).digest();
}

/** The bootstrap sealed with the project's private key: base64 of IV, tag and ciphertext. */
export function sealLambdaBootstrap(bootstrap: LambdaBootstrap, projectPrivateKey: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyOf(projectPrivateKey), iv);
  const sealed = Buffer.concat([cipher.update(JSON.stringify(bootstrap), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64');
}

/** The sealed bootstrap; throws when the key is not the one it was sealed with or the text was changed. */
export function openLambdaBootstrap(sealed: string, projectPrivateKey: string): LambdaBootstrap {
  const bytes = Buffer.from(sealed, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', keyOf(projectPrivateKey), bytes.subarray(0, IV_BYTES));
  decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  const plain = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
  return JSON.parse(plain.toString('utf8')) as LambdaBootstrap;
}
