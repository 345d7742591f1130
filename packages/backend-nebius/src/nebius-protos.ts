/**
 * Nebius's published API definitions (`assets/proto/nebius/…`, vendored from the nebius/api repository,
 * MIT), loaded for @grpc/grpc-js by core's proto loader (`@dstack/core/protos`, which reads each
 * aggregate `(buf.validate.field) = {…}` option as `true`). `buf/validate/validate.proto` and
 * `google/rpc/status.proto` are small stand-ins (see "The vendored protos" in the package README).
 */
import { fileURLToPath } from 'node:url';
import { loadProtoPackageDefinition } from '@dstack/core/protos';
import type { PackageDefinition } from '@grpc/proto-loader';

/** The vendored protos: `assets/proto/` beside `src/` and `dist/` (published with `dist/`, as runtime data). */
export const NEBIUS_PROTO_DIRECTORY = fileURLToPath(new URL('../assets/proto/', import.meta.url));

/** The files whose services this package calls. */
export const NEBIUS_SERVICE_FILES = [
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
] as const;

/** The package definition of the services this package calls, for `grpc.loadPackageDefinition`. */
export function loadNebiusPackageDefinition(directory = NEBIUS_PROTO_DIRECTORY): PackageDefinition {
  return loadProtoPackageDefinition(directory, NEBIUS_SERVICE_FILES);
}
