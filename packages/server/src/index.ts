export { type RunningServer, type StartServerOptions, startServer } from './app.js';
export type { AppContext, ServerSettings } from './context.js';
export { ServerStartError } from './server-start-error.js';
export { loadServerSettings } from './settings.js';
/** A backend with unlimited instant capacity on one real shim, for tests and benchmarks (not for production). */
export { createInstantBackend, type InstantBackend } from './testing/instant-backend.js';
