export { type RunningServer, type StartServerOptions, startServer } from './app.js';
export type { AppContext } from './context.js';
export { ServerStartError } from './server-start-error.js';
export { loadServerSettings, type ServerSettings } from './settings.js';
