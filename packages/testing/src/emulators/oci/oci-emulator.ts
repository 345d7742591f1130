/**
 * The OCI emulator: one loopback server answering OCI's signed REST API as the official SDK
 * (`oci-common`'s request signer, `oci-identity`'s client pointed at it by `endpoint`) calls it:
 * every request's HTTP signature is verified against the user's API key
 * (`oci-request-signature.ts`). Today it models Identity's tenancy and region subscriptions, what a
 * backend checks its credentials with; Core Services (instances, VNICs, security lists, block
 * volumes) are still to come.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { BackendEmulator } from '../../conformance/test-backend-options.js';
import { json } from '../../emulator/emulator-responses.js';
import {
  type EmulatorRequest,
  type EmulatorServer,
  startEmulatorServer,
} from '../../emulator/emulator-server.js';
import { OciApiError } from './oci-api-error.js';
import { type OciApiKey, ociKeyFingerprint, verifyOciSignature } from './oci-request-signature.js';

/** Region names and keys, as `ListRegionSubscriptions` answers them. */
export interface OciRegion {
  readonly name: string;
  readonly key: string;
}

export const DEFAULT_OCI_EMULATOR_REGIONS: readonly OciRegion[] = [
  { name: 'us-ashburn-1', key: 'IAD' },
  { name: 'eu-frankfurt-1', key: 'FRA' },
];

/** A user of the tenancy with an API signing key: what dstack's `client` creds carry. */
export interface OciUser {
  readonly tenancy: string;
  readonly user: string;
  readonly fingerprint: string;
  /** The private key (PKCS#8 PEM): `creds.key_content`. */
  readonly privateKey: string;
}

export interface OciEmulatorOptions {
  /** Default 0 (a free port). */
  port?: number;
  regions?: readonly OciRegion[];
}

export interface OciEmulator extends BackendEmulator {
  /** `http://127.0.0.1:<port>`: every service's endpoint. */
  readonly url: string;
  readonly server: EmulatorServer;
  readonly regions: readonly OciRegion[];
  /** The tenancy's user whose API key the emulator knows. */
  readonly user: OciUser;
  close(): Promise<void>;
}

function ocid(kind: string, region = ''): string {
  return `ocid1.${kind}.oc1.${region}.${randomBytes(30).toString('hex').slice(0, 60)}`;
}

/** A user with a fresh RSA key pair, its public half registered with the emulator. */
function createUser(): { user: OciUser; key: OciApiKey } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const tenancy = ocid('tenancy');
  const user = ocid('user');
  const fingerprint = ociKeyFingerprint(publicKey);
  return {
    user: {
      tenancy,
      user,
      fingerprint,
      privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    },
    key: { tenancy, user, fingerprint, publicKey },
  };
}

export async function startOciEmulator(options: OciEmulatorOptions = {}): Promise<OciEmulator> {
  const regions = options.regions ?? DEFAULT_OCI_EMULATOR_REGIONS;
  const { user, key } = createUser();
  const keys = [key];
  const signed =
    (handler: (request: EmulatorRequest, signer: OciApiKey) => ReturnType<typeof json>) =>
    (request: EmulatorRequest) =>
      handler(request, verifyOciSignature(request, keys, Date.now()));
  const ownTenancy = (request: EmulatorRequest, signer: OciApiKey) => {
    if (request.params.tenancyId !== signer.tenancy) {
      throw new OciApiError(
        404,
        'NotAuthorizedOrNotFound',
        'Authorization failed or requested resource not found.',
      );
    }
  };
  const server = await startEmulatorServer({
    port: options.port,
    routes: [
      {
        name: 'identity.getTenancy',
        method: 'GET',
        path: '/20160918/tenancies/:tenancyId',
        handle: signed((request, signer) => {
          ownTenancy(request, signer);
          return json({
            id: signer.tenancy,
            name: 'dstack-emulator',
            homeRegionKey: regions[0]?.key,
            description: null,
          });
        }),
      },
      {
        name: 'identity.listRegionSubscriptions',
        method: 'GET',
        path: '/20160918/tenancies/:tenancyId/regionSubscriptions',
        handle: signed((request, signer) => {
          ownTenancy(request, signer);
          return json(
            regions.map((region, index) => ({
              regionKey: region.key,
              regionName: region.name,
              status: 'READY',
              isHomeRegion: index === 0,
            })),
          );
        }),
      },
    ],
  });
  return {
    url: server.url,
    server,
    regions,
    user,
    close: () => server.close(),
  };
}
