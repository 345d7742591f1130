/**
 * Backend names in configurations (`backends: [aws, gcp]`, `backend: aws`). Third-party backend
 * packages add their own names, so any lowercase identifier is accepted, as in
 * `models/backend-type.ts`; a misspelt backend then matches no offers rather than failing here.
 */
import * as z from 'zod';
import { BACKEND_TYPE_PATTERN } from '../models/backend-type.js';

export const configurationBackendSchema = z
  .string()
  .regex(BACKEND_TYPE_PATTERN, { error: 'expected a backend name such as aws, gcp or runpod (lowercase)' });
