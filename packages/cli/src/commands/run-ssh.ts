/**
 * SSH access to an attached run, shared by `dstack attach` and `dstack apply` of a dev
 * environment: the `ssh RUN` configuration before the run starts, then, once it runs, how to
 * connect and its `ports` forwarded to localhost.
 */
import { homedir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { type PortMapping, portMappingSchema, type Run } from '@dstack/core';
import type { DstackApiClient } from '../api/client.js';
import type { CliIo } from '../io.js';
import { latestSubmission } from '../output/format.js';
import { printable } from '../output/printable.js';
import { CommandError, describeError } from '../output/report-error.js';
import { type ForwardedPort, SshPortForwarder } from '../ssh/port-forwarder.js';
import { installRunHost } from '../ssh/ssh-config.js';
import { ensureUserSshKey, type UserSshKey } from '../ssh/user-ssh-key.js';

/** This CLI's bin, run by OpenSSH as the ProxyCommand (with this node, not whichever is on PATH). */
const DSTACK_BIN = fileURLToPath(new URL('../bin/dstack.js', import.meta.url));

/** Makes `ssh RUN` work: the user's key, the run's `Host` block and the `Include` of it. */
export async function prepareRunSsh(client: DstackApiClient, runName: string): Promise<UserSshKey> {
  const key = await ensureUserSshKey();
  await installRunHost({
    home: process.env.HOME || homedir(),
    runName,
    projectName: client.projectName,
    identityFile: key.privateKeyPath,
    dstackCommand: [process.execPath, DSTACK_BIN],
  });
  return key;
}

/** The configuration's `ports` (tasks and dev environments), in any of their written forms. */
export function configuredPorts(run: Run): PortMapping[] {
  const ports = (run.run_spec.configuration as { ports?: unknown }).ports ?? [];
  if (!Array.isArray(ports)) throw new CommandError('run_spec.configuration.ports: expected a list');
  return ports.map((port, index) => {
    const parsed = portMappingSchema.safeParse(port);
    if (!parsed.success) {
      throw new CommandError(`run_spec.configuration.ports[${index}]: ${parsed.error.issues[0]?.message}`);
    }
    return parsed.data;
  });
}

/** How to reach the run: `ssh RUN`, a dev environment's VS Code link, the forwarded ports. */
export function formatConnectInstructions(
  run: Run,
  runName: string,
  forwarded: readonly ForwardedPort[],
): string {
  const name = printable(runName);
  const lines = [`To connect to ${name} via SSH, use: ssh ${name}`];
  if (run.run_spec.configuration.type === 'dev-environment') {
    const workingDir = printable(latestSubmission(run)?.job_runtime_data?.working_dir ?? '');
    lines.push('To open it in VS Code Desktop, use this link:');
    lines.push(`  vscode://vscode-remote/ssh-remote+${name}${workingDir.replace(/^(?!\/|$)/, '/')}`);
  }
  if (forwarded.length > 0) {
    lines.push('Forwarded ports:');
    for (const port of forwarded) lines.push(`  localhost:${port.localPort} -> ${port.containerPort}`);
  }
  return `${lines.join('\n')}\n`;
}

/** One line about a failure the command goes on after (the CLI's wording for errors it knows). */
function describeBriefly(error: unknown): string {
  const lines = describeError(error)?.map((line) => line.replace(/^error: /, ''));
  return lines?.join('; ') ?? printable(error instanceof Error ? error.message : String(error));
}

/**
 * Once the run is running: forwards its ports and prints how to connect. Ports that cannot be
 * listened on, and forwarded connections that fail, are reported on stderr; the rest go on.
 * Returns the forwarder to close when detaching.
 */
export async function startRunSsh(
  client: DstackApiClient,
  run: Run,
  runName: string,
  key: UserSshKey,
  io: CliIo,
): Promise<SshPortForwarder> {
  const reportError = (message: string, error: unknown) => {
    io.stderr(`error: ${message}: ${describeBriefly(error)}\n`);
  };
  const forwarder = new SshPortForwarder({
    openTunnel: () => client.openSshTunnel(runName),
    privateKey: key.privateKey,
    onError: (error, port) => reportError(`localhost:${port.localPort} -> ${port.containerPort}`, error),
  });
  const forwarded: ForwardedPort[] = [];
  for (const port of configuredPorts(run)) {
    try {
      forwarded.push(await forwarder.forward(port.local_port, port.container_port));
    } catch (error) {
      reportError(`cannot forward localhost:${port.local_port ?? '*'} -> ${port.container_port}`, error);
    }
  }
  io.stdout(formatConnectInstructions(run, runName, forwarded));
  return forwarder;
}
