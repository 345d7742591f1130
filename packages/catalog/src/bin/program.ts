import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { CliError } from './cli-error.js';
import { registerCollectCommand } from './commands/collect.js';
import { registerPublishCommand } from './commands/publish.js';
import { registerQueryCommand } from './commands/query.js';

function packageVersion(): string {
  try {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: string;
    };
    return manifest.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/** The `dstack-catalog` command tree. Parse errors throw `CommanderError` instead of exiting. */
export function createProgram(): Command {
  const program = new Command('dstack-catalog')
    .description('query GPU and CPU cloud offers from a gpuhunt-compatible price catalog')
    .version(packageVersion())
    .exitOverride()
    .showHelpAfterError('(run with --help for usage)');
  registerQueryCommand(program);
  registerCollectCommand(program);
  registerPublishCommand(program);
  return program;
}

/** Runs the CLI; resolves to the process exit code (0 ok, 1 failure, 2 bad usage). */
export async function runCli(argv: readonly string[]): Promise<number> {
  try {
    await createProgram().parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version "errors" exit 0; commander has already printed every message.
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof CliError) {
      process.stderr.write(`error: ${error.message}\n`);
      return error.exitCode;
    }
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}
