export { generateEd25519KeyPair, type OpenSshKeyPair } from './openssh-key-pair.js';
