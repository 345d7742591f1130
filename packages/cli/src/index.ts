export {
  type ApiErrorDetail,
  InvalidTokenError,
  ServerApiError,
  ServerTimeoutError,
  ServerUnreachableError,
  UnexpectedResponseError,
} from './api/api-errors.js';
export {
  DEFAULT_REQUEST_TIMEOUT_MS,
  DstackApiClient,
  type DstackApiClientOptions,
  type OffersResponse,
  type RequestOptions,
  type WaitNotice,
} from './api/client.js';
export { LogReader, LogWriter } from './api/log-reader.js';
export type { RunningServer, ServerModule } from './commands/server.js';
export {
  VALIDATE_FORMATS,
  type ValidateFormat,
  type ValidateOptions,
  validateCommand,
} from './commands/validate.js';
export {
  type CliConfig,
  CliConfigError,
  cliConfigPath,
  loadCliConfig,
  type ProjectConfig,
  saveCliConfig,
  selectProject,
  upsertProject,
} from './config/cli-config.js';
export { type CliIo, processIo } from './io.js';
export { formatRelativeTime } from './output/format.js';
export {
  formatProperties,
  formatTable,
  type StyledCell,
  styled,
  type TableCell,
  type TableColumn,
  type TableOptions,
} from './output/table.js';
export { createProgram, run, VERSION } from './program.js';
export {
  type ExpandConfigurationProviderOptions,
  expandConfigurationProvider,
} from './providers/expand-configuration-provider.js';
export { isFileSpecifier, loadProvider, resolveProviderModule } from './providers/load-provider.js';
