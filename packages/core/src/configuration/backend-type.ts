/**
 * Backend names in configurations (`backends: [aws, gcp]`, `backend: aws`). Third-party backend
 * packages add their own names, so any lowercase identifier is accepted, as in
 * `models/backend-type.ts`; a misspelt backend then matches no offers rather than failing here.
 */
import { z } from 'zod';

export const configurationBackendSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_-]*$/, { error: 'expected a backend name such as aws, gcp or runpod (lowercase)' });
