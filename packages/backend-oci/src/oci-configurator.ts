import {
  type BackendRecord,
  type Configurator,
  InvalidCredentialsError,
  refuseCustomEndpoint,
  refuseDefaultCreds,
  refuseServerFileFromApi,
  ServerClientError,
  type StoredBackendRecord,
  type ValidateConfigOptions,
} from '@dstack/core';
import { OciClients } from './oci-clients.js';
import { createOciBackend, type OciCompute, typedOciError } from './oci-compute.js';
import {
  OCI_BACKEND_TYPE,
  type OciBackendConfig,
  type OciBackendConfigWithCreds,
  type OciConfig,
  type OciCreds,
  ociConfigModels,
} from './oci-config.js';
import {
  getOrCreateCompartment,
  setUpNetworkResources,
  waitUntilCompartmentActive,
} from './oci-network-setup.js';

/** dstack's `SUPPORTED_REGIONS`: where dstack publishes its images. */
export const OCI_SUPPORTED_REGIONS: readonly string[] = [
  'eu-frankfurt-1',
  'eu-milan-1',
  'me-dubai-1',
  'uk-london-1',
  'us-ashburn-1',
  'us-chicago-1',
  'us-phoenix-1',
];

function invalidConfigField(field: readonly string[], reason: string): ServerClientError {
  return new ServerClientError(`Invalid oci backend config: ${field.join('.')}: ${reason}`, {
    fields: [[...field]],
  });
}

/** The config checked against the schema and dstack's key rule; the error names the first bad field. */
export function parseOciBackendConfig(config: unknown): OciBackendConfigWithCreds {
  const result = ociConfigModels.backendConfigWithCreds.safeParse(config);
  if (!result.success) {
    const issue = result.error.issues[0];
    const path = (issue?.path ?? []).map(String);
    // A misspelt field: name it, not the object it is in.
    if (issue?.code === 'unrecognized_keys' && issue.keys[0]) path.push(issue.keys[0]);
    throw invalidConfigField(path.length > 0 ? path : ['config'], issue?.message ?? 'is invalid');
  }
  const { creds } = result.data;
  if (creds.type === 'client') {
    if (creds.key_file && creds.key_content)
      throw invalidConfigField(['creds', 'key_content'], 'key_file and key_content are mutually exclusive');
    if (!creds.key_file && !creds.key_content)
      throw invalidConfigField(['creds', 'key_content'], 'Either key_file or key_content should be set');
  }
  return result.data;
}

/** The error for credentials OCI refused, naming `creds` as dstack does. */
export function invalidCredentials(_creds: OciCreds, cause?: unknown): InvalidCredentialsError {
  return new InvalidCredentialsError([['creds']], { cause });
}

/** The tenancy's READY region subscriptions and its home region (dstack's `get_subscribed_regions`). */
async function subscribedRegions(
  clients: OciClients,
  creds: OciCreds,
): Promise<{ names: Set<string>; home: string }> {
  try {
    const { items } = await clients
      .region(clients.credsRegion)
      .identity.listRegionSubscriptions({ tenancyId: clients.tenancy });
    const names = new Set(
      items.filter((each) => String(each.status) === 'READY').map((each) => each.regionName),
    );
    const home = items.find((each) => each.isHomeRegion)?.regionName ?? clients.credsRegion;
    return { names, home };
  } catch (error) {
    const typed = typedOciError(error);
    if (typed instanceof Error && typed.name === 'BackendAuthenticationError')
      throw invalidCredentials(creds, error);
    throw typed;
  }
}

function chooseRegions(configured: readonly string[] | null | undefined, subscribed: Set<string>): string[] {
  if (configured == null) {
    const available = OCI_SUPPORTED_REGIONS.filter((region) => subscribed.has(region));
    if (available.length === 0) {
      throw new ServerClientError(
        `None of your subscribed regions ${[...subscribed].join(', ')} are supported by dstack yet. Currently supported regions are: ${OCI_SUPPORTED_REGIONS.join(', ')}`,
      );
    }
    return available;
  }
  const unsupported = configured.filter((region) => !OCI_SUPPORTED_REGIONS.includes(region));
  if (unsupported.length > 0) {
    throw invalidConfigField(
      ['regions'],
      `Regions ${unsupported.join(', ')} are configured but not supported by dstack yet. Only these regions are supported: ${OCI_SUPPORTED_REGIONS.join(', ')}`,
    );
  }
  const unsubscribed = configured.filter((region) => !subscribed.has(region));
  if (unsubscribed.length > 0)
    throw invalidConfigField(
      ['regions'],
      `Regions ${unsubscribed.join(', ')} are configured but not subscribed to in OCI`,
    );
  return [...configured];
}

/**
 * Turns `backends: [{type: oci, ...}]` into a stored record and an `OciCompute`, as dstack's
 * configurator: checks the creds by listing the tenancy's region subscriptions, picks the regions,
 * and makes the compartment (unless given) and each region's VCN, internet gateway and subnet.
 */
export class OciConfigurator implements Configurator<OciBackendConfigWithCreds, OciBackendConfig> {
  readonly type = OCI_BACKEND_TYPE;

  async validateConfig(config: OciBackendConfigWithCreds, options: ValidateConfigOptions): Promise<void> {
    const parsed = parseOciBackendConfig(config);
    refuseDefaultCreds(parsed.creds, options, 'client');
    refuseCustomEndpoint(options, ['endpoint_url'], parsed.endpoint_url);
    if (parsed.creds.type === 'client' && parsed.creds.key_file)
      refuseServerFileFromApi(options, ['creds', 'key_file'], 'creds.key_content');
    if (parsed.creds.type === 'default')
      refuseServerFileFromApi(options, ['creds', 'file'], 'creds of type client');
    const subscribed = await subscribedRegions(new OciClients(parsed), parsed.creds);
    chooseRegions(parsed.regions, subscribed.names);
  }

  async createBackend(projectName: string, config: OciBackendConfigWithCreds): Promise<BackendRecord> {
    const parsed = parseOciBackendConfig(config);
    const clients = new OciClients(parsed);
    const subscribed = await subscribedRegions(clients, parsed.creds);
    const regions = chooseRegions(parsed.regions, subscribed.names);
    try {
      const compartmentId =
        parsed.compartment_id ??
        (await getOrCreateCompartment(
          clients.region(subscribed.home),
          `dstack-${projectName}`,
          clients.tenancy,
        ));
      for (const region of regions) await waitUntilCompartmentActive(clients.region(region), compartmentId);
      const subnets = await Promise.all(
        regions.map(
          async (region) =>
            [
              region,
              await setUpNetworkResources(clients.region(region), compartmentId, projectName),
            ] as const,
        ),
      );
      const filled = {
        ...parsed,
        regions,
        compartment_id: compartmentId,
        subnet_ids_per_region: Object.fromEntries(subnets),
      } as OciConfig;
      const { creds, ...stored } = filled;
      return ociConfigModels.toRecord(stored, creds);
    } catch (error) {
      throw typedOciError(error);
    }
  }

  getBackendConfigWithCreds(record: StoredBackendRecord): OciBackendConfigWithCreds {
    return ociConfigModels.configWithCredsFromRecord(record);
  }

  getBackendConfigWithoutCreds(record: StoredBackendRecord): OciBackendConfig {
    return ociConfigModels.configWithoutCredsFromRecord(record);
  }

  /** Builds the Compute without calling OCI: clients are created on first use. */
  async getCompute(record: StoredBackendRecord): Promise<OciCompute> {
    return createOciBackend({ config: ociConfigModels.configFromRecord(record) });
  }
}
