/** User tokens: random UUIDs (as dstack), stored only as their sha256. */
import { createHash, randomUUID } from 'node:crypto';

/** A new user token (a UUID v4, as dstack issues). */
export function generateToken(): string {
  return randomUUID();
}

/** What the database stores and looks tokens up by: sha256, hex. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
