// Types of render-docs.mjs, for the tests in @dstack/testing.
export const BACKENDS_BEGIN_MARKER: string;
export const BACKENDS_END_MARKER: string;

export interface DocumentedBackend {
  packageName: string;
  relativeDir: string;
  plugin: {
    type: string;
    computeKind: string;
    capabilities: readonly string[];
    provisioningTimeoutSeconds?: unknown;
    configSchemas?: unknown;
  };
}

export interface CoreFacts {
  capabilities: readonly string[];
  defaultProvisioningTimeoutSeconds: number;
}

export function renderServerConfigDoc(input: {
  serverConfigSchema: unknown;
  backends: DocumentedBackend[];
}): string;
export function renderBackendsTable(input: {
  backends: DocumentedBackend[];
  core: CoreFacts;
  /** The map's entries without a package in the workspace (`backendsWithoutPackage`). */
  withoutPackage?: readonly { type: string; packageName: string }[];
}): string;
export function spliceGeneratedBlock(document: string, block: string, file?: string): string;
