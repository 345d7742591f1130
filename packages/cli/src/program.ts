import { createRequire } from 'node:module';
import { Command, CommanderError, Option } from 'commander';
import { VALIDATE_FORMATS, type ValidateFormat, validateCommand } from './commands/validate.js';
import { type CliIo, processIo, red } from './io.js';

const packageJson = createRequire(import.meta.url)('../package.json') as { version: string };

/** The version of @dstack/cli. */
export const VERSION: string = packageJson.version;

/**
 * Builds the `dstack` command. Actions store their exit code in `result.exitCode`
 * instead of exiting, so the program can run in-process (tests) as well as from the bin.
 */
export function createProgram(io: CliIo, result: { exitCode: number }): Command {
  const program = new Command('dstack')
    .description('dstack: orchestrate AI workloads on any cloud')
    .version(VERSION, '--version', 'print the version')
    .helpOption('-h, --help', 'print help')
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({
      writeOut: io.stdout,
      writeErr: io.stderr,
      outputError: (text, write) => write(red(text, io.stderrColors)),
    })
    .exitOverride();

  program
    .command('validate')
    .description('check a configuration file and print it with defaults applied')
    .requiredOption('-f, --file <file>', 'the configuration file (.dstack.yml)')
    .addOption(new Option('--format <format>', 'output format').choices(VALIDATE_FORMATS).default('yaml'))
    .action(async (options: { file: string; format: ValidateFormat }) => {
      result.exitCode = await validateCommand(options, io);
    });

  return program;
}

/** Runs the CLI with `argv` (as `process.argv`) and returns the exit code. */
export async function run(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  const result = { exitCode: 0 };
  const program = createProgram(io, result);
  try {
    if (argv.length <= 2) {
      program.outputHelp();
      return 0;
    }
    await program.parseAsync([...argv]);
    return result.exitCode;
  } catch (error) {
    // Help and version end with a CommanderError whose exitCode is 0.
    if (error instanceof CommanderError) return error.exitCode;
    throw error;
  }
}
