/**
 * The Nebius protos the emulator serves: the same published definitions `@dstack/backend-nebius`
 * vendors (its `assets/proto/` directory, read from the workspace: this package is private), loaded
 * by core's proto loader as the backend loads them.
 */
import { fileURLToPath } from 'node:url';
import { loadProtoPackageDefinition } from '@dstack/core/protos';
import type { PackageDefinition } from '@grpc/proto-loader';

/** `packages/backend-nebius/assets/proto`, from `src/emulators/nebius/` and `dist/emulators/nebius/` alike. */
export const NEBIUS_EMULATOR_PROTO_DIRECTORY = fileURLToPath(
  new URL('../../../../backend-nebius/assets/proto/', import.meta.url),
);

/** The services Nebius answers that the emulator models. */
const SERVED_FILES = [
  'nebius/iam/v1/token_exchange_service.proto',
  'nebius/iam/v1/tenant_service.proto',
  'nebius/iam/v1/project_service.proto',
  'nebius/vpc/v1/subnet_service.proto',
  'nebius/compute/v1/instance_service.proto',
  'nebius/compute/v1/disk_service.proto',
  'nebius/compute/v1/gpu_cluster_service.proto',
  'nebius/compute/v1/platform_service.proto',
  'nebius/common/v1/operation_service.proto',
  'nebius/billing/v1alpha1/calculator_service.proto',
];

let loaded: PackageDefinition | undefined;

/** Loaded once per process: every emulator serves the same definitions. */
export function nebiusEmulatorPackageDefinition(): PackageDefinition {
  loaded ??= loadProtoPackageDefinition(NEBIUS_EMULATOR_PROTO_DIRECTORY, SERVED_FILES);
  return loaded;
}
