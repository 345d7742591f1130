export { type ElfProgram, readElfProgram } from './elf-program.js';
export {
  buildPortableRuntime,
  type PortableRuntime,
  type PortableRuntimeSources,
  type PreparePortableRuntimeOptions,
  preparePortableRuntime,
  readPortableRuntime,
} from './portable-runtime.js';
export { RUNTIME_ARCHIVE_ROOT, writePortableRuntimeArchive } from './portable-runtime-archive.js';
export {
  type PortableRuntimeManifest,
  RUNTIME_MANIFEST_FILE,
  RUNTIME_RUNNER_FILE,
  runtimeNodeCommand,
  runtimeRunnerCommand,
} from './portable-runtime-layout.js';
