// Types of generate.mjs, for the tests in @dstack/testing.
export const SERVER_CONFIG_DOC: 'docs/server-config.md';
export const BACKENDS_DOC: 'docs/backends.md';
/** Relative path → regenerated content. */
export function generateDocs(root: string): Promise<Map<string, string>>;
/** The paths of `generated` whose file under `root` is missing or differs. */
export function findStaleDocs(root: string, generated: Map<string, string>): string[];
