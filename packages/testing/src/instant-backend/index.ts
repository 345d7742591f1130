// `@dstack/testing/instant-backend`: the instant backend without the conformance suite, whose
// import needs a running vitest, so that the bench (a plain Node process) can load it.
export {
  createInstantBackend,
  INSTANT_BACKEND_TYPE,
  type InstantBackend,
  type InstantBackendOptions,
} from './instant-backend.js';
export { type ShimProcess, type ShimProcessOptions, startShimProcess } from './shim-process.js';
