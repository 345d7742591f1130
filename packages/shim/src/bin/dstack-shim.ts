#!/usr/bin/env node
import { runShimCommand } from './run-shim-command.js';

runShimCommand(process.argv.slice(2)).then(
  (exitCode) => process.exit(exitCode),
  (error: unknown) => {
    process.stderr.write(`dstack-shim: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
