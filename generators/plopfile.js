/**
 * The repository's code generators, run with `pnpm plop <generator>`.
 * `pnpm plop backend` scaffolds a backend package (see docs/adding-a-backend.md).
 */
import { registerBackendGenerator } from './backend/backend-generator.js';

/** @param {import('plop').NodePlopAPI} plop */
export default function plopfile(plop) {
  registerBackendGenerator(plop);
}
