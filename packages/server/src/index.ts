export { type RunningServer, type StartServerOptions, startServer } from './app.js';
export type { AppContext, ServerSettings } from './context.js';
export { ServerStartError } from './server-start-error.js';
export { loadServerSettings } from './settings.js';
