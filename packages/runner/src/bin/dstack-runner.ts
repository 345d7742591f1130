#!/usr/bin/env node
// Also the entry of the single-file bundle (dist/dstack-runner.bundle.mjs) that runs inside job
// containers: it must import nothing but node built-ins and zod.
import { runRunnerCommand } from './run-runner-command.js';

runRunnerCommand(process.argv.slice(2)).then(
  (exitCode) => process.exit(exitCode),
  (error: unknown) => {
    process.stderr.write(`dstack-runner: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
