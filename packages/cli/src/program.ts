import { createRequire } from 'node:module';
import { Command, CommanderError, Option } from 'commander';
import { type ApplyOptions, applyCommand } from './commands/apply.js';
import { type AttachCommandOptions, attachCommand } from './commands/attach.js';
import { type DeleteOptions, deleteCommand } from './commands/delete.js';
import { type FleetDeleteOptions, fleetDeleteCommand, fleetListCommand } from './commands/fleet.js';
import { type LogsOptions, logsCommand } from './commands/logs.js';
import { OFFER_FORMATS, type OfferOptions, offerCommand } from './commands/offer.js';
import {
  type ProjectAddOptions,
  projectAddCommand,
  projectDeleteCommand,
  projectListCommand,
  projectSetDefaultCommand,
} from './commands/project.js';
import { PS_FORMATS, type PsOptions, psCommand } from './commands/ps.js';
import { type ServerOptions, serverCommand } from './commands/server.js';
import { type SshProxyOptions, sshProxyCommand } from './commands/ssh-proxy.js';
import { type StopOptions, stopCommand } from './commands/stop.js';
import { VALIDATE_FORMATS, type ValidateFormat, validateCommand } from './commands/validate.js';
import { type CliIo, processIo, red } from './io.js';
import { reportError } from './output/report-error.js';

const packageJson = createRequire(import.meta.url)('../package.json') as { version: string };

/** The version of @dstack/cli. */
export const VERSION: string = packageJson.version;

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

function projectOption(): Option {
  return new Option('--project <name>', 'the project to use (default: the default project)').env(
    'DSTACK_PROJECT',
  );
}

function yesOption(): Option {
  return new Option('-y, --yes', 'do not ask for confirmation');
}

/**
 * Builds the `dstack` command. Actions store their exit code in `result.exitCode`
 * instead of exiting, so the program can run in-process (tests) as well as from the bin.
 */
export function createProgram(io: CliIo, result: { exitCode: number }): Command {
  /** Runs a command, turning the errors the CLI knows into `error: …` and exit code 1. */
  const run = async (command: () => Promise<number>) => {
    try {
      result.exitCode = await command();
    } catch (error) {
      result.exitCode = reportError(error, io);
    }
  };

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

  program
    .command('server')
    .description('start the dstack server and point the main project at it')
    .option('--host <host>', 'the interface to listen on')
    .option('-p, --port <port>', 'the port to listen on')
    .addOption(yesOption())
    .action((options: ServerOptions) => run(() => serverCommand(options, io)));

  const project = program.command('project').description('manage the projects in ~/.dstack/config.yml');
  project
    .command('add')
    .description('add or update a project')
    .requiredOption('--name <name>', 'the project name')
    .requiredOption('--url <url>', 'the server URL')
    .requiredOption('--token <token>', "the user's token")
    .option('--default', 'make it the default project')
    .option('--no-check', 'save without checking the token against the server')
    .addOption(yesOption())
    .action((options: ProjectAddOptions) => run(() => projectAddCommand(options, io)));
  project
    .command('list')
    .description('list the projects')
    .action(() => run(() => projectListCommand(io)));
  project
    .command('set-default')
    .description('make a project the default')
    .argument('<name>', 'the project name')
    .action((name: string) => run(() => projectSetDefaultCommand(name, io)));
  project
    .command('delete')
    .description('remove a project from the configuration')
    .argument('<name>', 'the project name')
    .addOption(yesOption())
    .action((name: string, options: { yes?: boolean }) => run(() => projectDeleteCommand(name, options, io)));

  program
    .command('apply')
    .description('plan and submit a run (and attach to it), or apply a fleet')
    .requiredOption('-f, --file <file>', 'the configuration file (.dstack.yml)')
    .addOption(yesOption())
    .option('-d, --detach', 'submit and exit without attaching')
    .option('--force', 're-create even when nothing changed')
    .option('-n, --name <name>', 'the run name (overrides the file)')
    .addOption(projectOption())
    .action((options: ApplyOptions) => run(() => applyCommand(options, io)));

  program
    .command('ps')
    .description('list runs')
    .option('-a, --all', 'include finished runs')
    .option('-v, --verbose', 'add resources, instance type, service URL and error')
    .addOption(new Option('--format <format>', 'output format').choices(PS_FORMATS).default('table'))
    .addOption(projectOption())
    .action((options: PsOptions) => run(() => psCommand(options, io)));

  program
    .command('logs')
    .description("print a run's logs")
    .argument('<run>', 'the run name')
    .option('-f, --follow', 'keep printing until the run finishes')
    .addOption(projectOption())
    .action((runName: string, options: LogsOptions) => run(() => logsCommand(runName, options, io)));

  program
    .command('attach')
    .description("configure `ssh RUN`, forward the run's ports to localhost and stay until Ctrl-C")
    .argument('<run>', 'the run name')
    .addOption(projectOption())
    .action((runName: string, options: AttachCommandOptions) =>
      run(() => attachCommand(runName, options, io)),
    );

  program
    .command('ssh-proxy')
    .description("join stdin/stdout to a job's SSH server (OpenSSH's ProxyCommand for `ssh RUN`)")
    .argument('<run>', 'the run name')
    .option('--job <number>', 'the job number', '0')
    .option('--replica <number>', 'the replica number', '0')
    .addOption(projectOption())
    .action((runName: string, options: SshProxyOptions) =>
      run(() => sshProxyCommand(runName, options, { input: process.stdin, output: process.stdout })),
    );

  program
    .command('stop')
    .description('stop a run')
    .argument('<run>', 'the run name')
    .option('-x, --abort', 'terminate at once instead of stopping gracefully')
    .addOption(yesOption())
    .addOption(projectOption())
    .action((runName: string, options: StopOptions) => run(() => stopCommand(runName, options, io)));

  program
    .command('offer')
    .description('list the offers matching requirements, without running anything')
    .option('--gpu <spec>', 'GPU requirement, e.g. A100:80GB:2, 24GB..:1, H100,H200:8')
    .option('--cpu <spec>', 'CPU requirement, e.g. 8, 4.., arm:8')
    .option('--memory <size>', 'memory requirement, e.g. 32GB..')
    .option('--disk <size>', 'disk requirement, e.g. 200GB..')
    .option('--spot', 'only spot offers')
    .option('--on-demand', 'only on-demand offers')
    .option('--max-price <usd>', 'maximum price per hour')
    .option('-b, --backend <backend>', 'a backend to consider (repeatable)', collect)
    .option('-r, --region <region>', 'a region to consider (repeatable)', collect)
    .option('--max-offers <count>', 'how many offers to fetch', '50')
    .addOption(new Option('--format <format>', 'output format').choices(OFFER_FORMATS).default('table'))
    .addOption(projectOption())
    .action((options: OfferOptions) => run(() => offerCommand(options, io)));

  const fleet = program.command('fleet').description('manage fleets');
  fleet
    .command('list')
    .description('list fleets and their instances')
    .addOption(projectOption())
    .action((options: { project?: string }) => run(() => fleetListCommand(options, io)));
  fleet
    .command('delete')
    .description('delete a fleet and terminate its instances')
    .argument('<name>', 'the fleet name')
    .addOption(yesOption())
    .addOption(projectOption())
    .action((name: string, options: FleetDeleteOptions) => run(() => fleetDeleteCommand(name, options, io)));

  program
    .command('delete')
    .description('delete the run or fleet a configuration file names')
    .requiredOption('-f, --file <file>', 'the configuration file (.dstack.yml)')
    .addOption(yesOption())
    .addOption(projectOption())
    .action((options: DeleteOptions) => run(() => deleteCommand(options, io)));

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
