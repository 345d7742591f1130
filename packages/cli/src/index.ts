export {
  VALIDATE_FORMATS,
  type ValidateFormat,
  type ValidateOptions,
  validateCommand,
} from './commands/validate.js';
export { type CliIo, processIo } from './io.js';
export { createProgram, run, VERSION } from './program.js';
