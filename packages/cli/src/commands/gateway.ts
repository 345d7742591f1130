/**
 * `dstack gateway list|delete|update`, and applying and deleting a `type: gateway` configuration.
 * A custom certificate's `certificate` and `private_key` may be paths, relative to the
 * configuration file: they are read here and sent as PEM.
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Gateway, GatewayConfiguration } from '@dstack/core';
import type { DstackApiClient } from '../api/client.js';
import type { CliIo } from '../io.js';
import { type Colors, createColors } from '../output/colors.js';
import { CommandError } from '../output/command-error.js';
import { formatRelativeTime } from '../output/format.js';
import { formatTable } from '../output/table.js';
import { confirmAction } from './confirm.js';
import { connect, type ProjectOption } from './connect.js';

const PROVISION_POLL_MS = 1_000;
const PROVISION_TIMEOUT_MS = 15 * 60_000;

/** Gateways as a table: NAME, BACKEND (`backend (region)`), HOSTNAME, DOMAIN, DEFAULT, STATUS, CREATED. */
export function formatGateways(gateways: readonly Gateway[], colors: Colors, now = new Date()): string {
  const rows = gateways.map((gateway) => {
    const { backend, region } = gateway.configuration as { backend?: string; region?: string };
    const hostname = gateway.replicas[0]?.hostname ?? gateway.ip_address ?? '';
    return [
      gateway.name,
      `${backend ?? ''} (${region ?? ''})`,
      hostname,
      gateway.wildcard_domain ?? '',
      gateway.default ? '✓' : '',
      gateway.status_message ? `${gateway.status} (${gateway.status_message})` : gateway.status,
      formatRelativeTime(gateway.created_at, now),
    ];
  });
  return formatTable(['NAME', 'BACKEND', 'HOSTNAME', 'DOMAIN', 'DEFAULT', 'STATUS', 'CREATED'], rows, {
    styleHeader: colors.bold,
  });
}

/** A PEM value as it is, or the file it names (relative to the configuration's directory). */
async function pemOf(value: string, field: string, configurationFile: string): Promise<string> {
  if (value.includes('-----BEGIN ')) return value;
  const path = resolve(dirname(configurationFile), value);
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new CommandError(`certificate.${field}: cannot read ${path}: ${(error as Error).message}`);
  }
}

/** The configuration with a custom certificate's files read. */
export async function withCertificateFiles(
  configuration: GatewayConfiguration,
  configurationFile: string,
): Promise<GatewayConfiguration> {
  const certificate = configuration.certificate;
  if (certificate?.type !== 'custom') return configuration;
  return {
    ...configuration,
    certificate: {
      ...certificate,
      certificate: await pemOf(certificate.certificate, 'certificate', configurationFile),
      private_key: await pemOf(certificate.private_key, 'private_key', configurationFile),
    },
  };
}

export interface ApplyGatewayOptions extends ProjectOption {
  yes?: boolean;
  /** Do not wait for the gateway to run. */
  detach?: boolean;
}

/** What differs between the server's gateway and the configuration, besides `domain` and `default`. */
/**
 * `dstack apply -f gateway.dstack.yml`, as dstack's CLI does it: the server's plan says whether
 * the gateway of that name changes in place (only `domain`/`default` changed) or must be
 * re-created (deleted, then created, after asking); a new gateway is followed until it runs.
 */
export async function applyGateway(
  configuration: GatewayConfiguration,
  configurationFile: string,
  options: ApplyGatewayOptions,
  io: CliIo,
): Promise<number> {
  const client = await connect(options, io);
  const colors = createColors(Boolean(io.stdoutColors));
  const spec = {
    configuration: await withCertificateFiles(configuration, configurationFile),
    configuration_path: configurationFile,
  };
  const plan = await client.getGatewayPlan(spec);
  const current = plan.current_resource;
  if (current && plan.action === 'update') {
    io.stdout(formatGateways([await client.applyGatewayPlan(spec, current)], colors));
    return 0;
  }
  const question = current
    ? `Gateway ${current.name} exists and cannot be updated in place. Re-create the gateway?`
    : `Gateway ${configuration.name ?? '(a generated name)'} does not exist yet. Create the gateway?`;
  if (!(await confirmAction(io, question, options.yes))) return 0;
  if (current) await deleteGatewayAndWait(client, current.name);
  let gateway = await client.applyGatewayPlan(spec, null);
  if (!options.detach) {
    const deadline = Date.now() + PROVISION_TIMEOUT_MS;
    while ((gateway.status === 'submitted' || gateway.status === 'provisioning') && Date.now() < deadline) {
      await sleep(PROVISION_POLL_MS);
      gateway = (await client.getGateway(gateway.name)) ?? gateway;
    }
  }
  io.stdout(formatGateways([gateway], colors));
  if (gateway.status === 'failed') {
    io.stderr(`Gateway ${gateway.name} failed: ${gateway.status_message ?? 'no reason given'}\n`);
    return 1;
  }
  return 0;
}

/** Deletes the gateway and waits until the server no longer lists it (deletion is asynchronous). */
async function deleteGatewayAndWait(client: DstackApiClient, name: string): Promise<void> {
  await client.deleteGateways([name]);
  const deadline = Date.now() + PROVISION_TIMEOUT_MS;
  while ((await client.getGateway(name)) !== null) {
    if (Date.now() > deadline)
      throw new CommandError(`Gateway ${name} was not deleted in time; try again later`);
    await sleep(PROVISION_POLL_MS);
  }
}

/** `dstack gateway list`. */
export async function gatewayListCommand(options: ProjectOption, io: CliIo): Promise<number> {
  const client = await connect(options, io);
  io.stdout(formatGateways(await client.listGateways(), createColors(Boolean(io.stdoutColors))));
  return 0;
}

export interface GatewayDeleteOptions extends ProjectOption {
  yes?: boolean;
}

async function deleteGateway(
  client: DstackApiClient,
  name: string,
  yes: boolean | undefined,
  io: CliIo,
): Promise<number> {
  if (!(await client.getGateway(name))) {
    io.stdout(`Gateway ${name} does not exist\n`);
    return 0;
  }
  if (!(await confirmAction(io, `Delete the gateway ${name}?`, yes))) return 0;
  await client.deleteGateways([name]);
  io.stdout(`Gateway ${name} deleted\n`);
  return 0;
}

/** `dstack gateway delete NAME`: its instance is terminated. */
export async function gatewayDeleteCommand(
  name: string,
  options: GatewayDeleteOptions,
  io: CliIo,
): Promise<number> {
  return deleteGateway(await connect(options, io), name, options.yes, io);
}

/** `dstack delete -f gateway.dstack.yml`. */
export async function deleteGatewayConfiguration(
  client: DstackApiClient,
  configuration: GatewayConfiguration,
  yes: boolean | undefined,
  io: CliIo,
): Promise<number> {
  if (!configuration.name) throw new CommandError('Configuration specifies no gateway to delete');
  return deleteGateway(client, configuration.name, yes, io);
}

export interface GatewayUpdateOptions extends ProjectOption {
  /** Make it the project's default gateway. */
  setDefault?: boolean;
  /** A new wildcard domain. */
  domain?: string;
}

/** `dstack gateway update NAME [--set-default] [--domain DOMAIN]`, as dstack's. */
export async function gatewayUpdateCommand(
  name: string,
  options: GatewayUpdateOptions,
  io: CliIo,
): Promise<number> {
  if (!options.setDefault && !options.domain)
    throw new CommandError('Nothing to update: give --set-default or --domain');
  const client = await connect(options, io);
  if (options.domain) await client.setGatewayWildcardDomain(name, options.domain);
  if (options.setDefault) await client.setDefaultGateway(name);
  const gateway = await client.getGateway(name);
  if (gateway) io.stdout(formatGateways([gateway], createColors(Boolean(io.stdoutColors))));
  return 0;
}
