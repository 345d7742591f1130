/**
 * The Azure emulator of @dstack/testing with the conformance suite's hooks, the configs that
 * point this backend at it, and a catalog of its sizes and prices for the process.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Catalog, directorySource, formatCatalogCsv, setDefaultCatalog } from '@dstack/catalog';
import type { BackendEmulator } from '@dstack/testing';
import { type AzureEmulator, type AzureEmulatorOptions, startAzureEmulator } from '@dstack/testing/emulators';
import type { AzureBackendConfigWithCreds } from './azure-config.js';

export interface AzureTestEmulator extends BackendEmulator {
  readonly azure: AzureEmulator;
}

/** A fast timeline: VMs provision in tens of milliseconds. */
export const FAST_TIMELINE = { provisioningMs: 50, deletingMs: 20 } as const;

export async function startAzureTestEmulator(options: AzureEmulatorOptions = {}): Promise<AzureTestEmulator> {
  const azure = await startAzureEmulator({ timeline: FAST_TIMELINE, ...options });
  return {
    azure,
    close: () => azure.close(),
    failNextLaunchWithNoCapacity: (count) => azure.failNextLaunchWithNoCapacity?.(count),
    removeInstance: (name) => azure.removeInstance?.(name),
    launchedMachineCount: () => azure.launchedMachineCount?.() ?? 0,
  };
}

/** A config with the emulator's service principal, pointed at it. */
export function emulatorConfig(
  azure: AzureEmulator,
  extra: Partial<AzureBackendConfigWithCreds> = {},
): AzureBackendConfigWithCreds {
  return {
    type: 'azure',
    tenant_id: azure.tenantId,
    subscription_id: azure.subscriptionId,
    regions: azure.data.regions.map((region) => region.name),
    endpoint_url: azure.url,
    authority_host: azure.url,
    ca_certificates: azure.certificate,
    creds: {
      type: 'client',
      client_id: azure.servicePrincipal.clientId,
      client_secret: azure.servicePrincipal.clientSecret,
    },
    ...extra,
  };
}

/** A catalog of the emulator's sizes and prices (`azure.csv` in a directory), as gpuhunt publishes them. */
export function emulatorCatalog(azure: AzureEmulator): Catalog {
  const directory = mkdtempSync(join(tmpdir(), 'dstack-azure-catalog-'));
  writeFileSync(join(directory, 'azure.csv'), formatCatalogCsv(azure.data.catalogItems()));
  return new Catalog({ source: directorySource(directory), providers: ['azure'] });
}

/** Makes the process's catalog {@link emulatorCatalog}, as a published gpuhunt catalog with Azure's rows would be. */
export function useEmulatorCatalog(azure: AzureEmulator): void {
  setDefaultCatalog(emulatorCatalog(azure));
}
