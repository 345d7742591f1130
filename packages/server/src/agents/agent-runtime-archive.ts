/**
 * The agent runtime the server copies to SSH fleet hosts: the one installed with it
 * (`@dstack/runner-runtime-linux-x64`, an optional dependency: it exists for linux x86_64 only),
 * the very artifact VMs download. It goes over the SSH connection as one `.tar.gz`
 * (`writePortableRuntimeArchive`, unpacked into `dstack-runtime/`), written once per runtime into
 * the temporary directory and shared by the deploys; hosts keep it under its `key`, so a host
 * that has it already gets nothing.
 */
import { createHash } from 'node:crypto';
import { access, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { AGENT_RUNTIME_SHIM_FILE } from '@dstack/core';
import {
  type PortableRuntimeManifest,
  RUNTIME_MANIFEST_FILE,
  RUNTIME_RUNNER_FILE,
  readPortableRuntime,
  writePortableRuntimeArchive,
} from '@dstack/runner';

/** The package the runtime comes in, and where in it. */
const AGENT_RUNTIME_PACKAGE = '@dstack/runner-runtime-linux-x64';
const RUNTIME_IN_PACKAGE = 'dist/dstack-runtime';

export interface AgentRuntimeArchive {
  /** The `.tar.gz` on this machine. */
  path: string;
  /** Names this runtime by content (16 hex digits): where hosts keep it. */
  key: string;
  manifest: PortableRuntimeManifest;
}

let prepared: Promise<AgentRuntimeArchive> | undefined;

/** The archive of the installed agent runtime, made at the first call (a failure is not kept). */
export function localAgentRuntime(): Promise<AgentRuntimeArchive> {
  if (prepared === undefined) {
    prepared = prepareArchive(installedRuntimeDirectory());
    prepared.catch(() => {
      prepared = undefined;
    });
  }
  return prepared;
}

/** Where the installed runtime package keeps the runtime ('' when the package is not installed). */
export function installedRuntimeDirectory(): string {
  try {
    const manifest = createRequire(import.meta.url).resolve(`${AGENT_RUNTIME_PACKAGE}/package.json`);
    return join(dirname(manifest), RUNTIME_IN_PACKAGE);
  } catch {
    return '';
  }
}

async function prepareArchive(directory: string): Promise<AgentRuntimeArchive> {
  const runtime = await readPortableRuntime(directory).catch((error: unknown) => {
    throw new Error(
      `the agent runtime that SSH fleet hosts run the shim from is not installed with this server ` +
        `(${AGENT_RUNTIME_PACKAGE}, for linux x86_64: install it, or build it with pnpm build): ${(error as Error).message}`,
    );
  });
  const hash = createHash('sha256');
  for (const file of [RUNTIME_MANIFEST_FILE, AGENT_RUNTIME_SHIM_FILE, RUNTIME_RUNNER_FILE]) {
    hash.update(await readFile(join(directory, file)));
  }
  const key = hash.digest('hex').slice(0, 16);
  const path = join(tmpdir(), `dstack-agent-runtime-${key}.tar.gz`);
  const exists = await access(path).then(
    () => true,
    () => false,
  );
  // Written by rename, so an existing file is complete.
  if (!exists) await writePortableRuntimeArchive(runtime, path);
  return { path, key, manifest: runtime.manifest };
}
