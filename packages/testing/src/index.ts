// The public surface of @dstack/testing: the backend conformance suite, the fake backend, the emulator toolkit,
// and the instant backend of the server's tests and the bench.
export {
  checkAgentAnswers,
  checkInvalidCredentialsError,
  checkNoCapacityError,
  checkProvisioningData,
  checkTerminateSucceeds,
  localAgentOf,
  type PollOptions,
  pollUntilHostname,
} from './conformance/compute-checks.js';
export { ConformanceViolation } from './conformance/conformance-violation.js';
export {
  anyCpuOfferRequirements,
  CONFORMANCE_JOB_IMAGE,
  conformanceInstanceConfiguration,
  conformanceRunJobParams,
} from './conformance/job-fixtures.js';
export {
  cheapestProvisionableOffer,
  checkOffersOrderedByPrice,
  checkOffersSatisfy,
  checkOffersWellFormed,
  type DerivedFilter,
  deriveFilters,
  offerMismatch,
} from './conformance/offer-checks.js';
export { checkDeclaredCapabilities, checkPlugin } from './conformance/plugin-checks.js';
export { generateProjectSshKeys } from './conformance/project-ssh-keys.js';
export { testBackend } from './conformance/test-backend.js';
export {
  type BackendEmulator,
  CONFORMANCE_CHECKS,
  type ConformanceCheck,
  type EmulatedAgentAddress,
  type InvalidCredentialsCheck,
  type MaybePromise,
  type ProvisioningPolling,
  type TestBackendContext,
  type TestBackendOptions,
} from './conformance/test-backend-options.js';
export {
  agentHealthcheck,
  type BootLocalAgentOptions,
  bootLocalAgent,
  type LocalAgent,
} from './emulator/boot-local-agent.js';
export {
  ANY_ROUTE,
  DEFAULT_THROTTLE_RESPONSE,
  type EmulatorFault,
} from './emulator/emulator-faults.js';
export {
  EmulatorConnectionReset,
  EmulatorHttpError,
  type EmulatorResponse,
  empty,
  json,
  text,
  xml,
} from './emulator/emulator-responses.js';
export {
  type EmulatorRequest,
  type EmulatorRoute,
  type EmulatorServer,
  type EmulatorServerOptions,
  type RecordedRequest,
  startEmulatorServer,
} from './emulator/emulator-server.js';
export {
  ENSURE_KUBERNETES_SCRIPT,
  holdKubernetesTestCluster,
  KUBERNETES_TEST_CLUSTER_LOCK,
  type KubernetesTestCluster,
  kubernetesTestCluster,
} from './engines/kubernetes-test-cluster.js';
export {
  createFakeBackend,
  createFakeBackendPlugin,
  type FakeBackend,
  type FakeBackendCall,
  type FakeBackendOptions,
  type FakeComputeMethod,
  type FakeGatewayInstance,
  type FakeInstance,
  type FakePlacementGroup,
} from './fake-backend/fake-backend.js';
export {
  FAKE_BACKEND_TYPE,
  FAKE_BACKEND_VALID_API_KEY,
  type FakeBackendConfig,
  type FakeBackendConfigWithCreds,
  type FakeBackendConfigWithoutCreds,
  fakeBackendConfigModels,
} from './fake-backend/fake-backend-config.js';
export {
  DEFAULT_FAKE_INSTANCE_TYPES,
  DEFAULT_FAKE_REGIONS,
  type FakeCapacity,
  type FakeInstanceType,
  fakeCatalog,
  fakeOffers,
} from './fake-backend/fake-offers.js';
export {
  createInstantBackend,
  INSTANT_BACKEND_TYPE,
  type InstantBackend,
  type InstantBackendOptions,
  type ShimProcess,
  type ShimProcessOptions,
  startShimProcess,
} from './instant-backend/index.js';
export { seededRandom } from './seeded-random.js';
/** The Slurm cluster of `ensure-slurm.sh` the Slurm backend's tests run against. */
export { findSlurmTestCluster, type SlurmTestCluster, slurmTestBackendConfig } from './slurm-test-cluster.js';
