/**
 * The `dstack` command tree. Only the definitions (names, options, descriptions) load here; a
 * command's implementation is imported when that command runs, so `dstack --help` starts
 * without zod schemas, undici, ssh2 or the server.
 */
import { createRequire } from 'node:module';
import { Argument, Command, CommanderError, Option } from 'commander';
import type { ApplyOptions } from './commands/apply.js';
import type { AttachCommandOptions } from './commands/attach.js';
import type { ProjectOption } from './commands/connect.js';
import type { DeleteOptions } from './commands/delete.js';
import type { EventOptions } from './commands/event.js';
import type { FleetDeleteOptions } from './commands/fleet.js';
import type { GatewayDeleteOptions, GatewayUpdateOptions } from './commands/gateway.js';
import type { InitOptions } from './commands/init.js';
import type { LogsOptions } from './commands/logs.js';
import type { MetricsOptions } from './commands/metrics.js';
import type { OfferOptions } from './commands/offer.js';
import {
  OFFER_FORMATS,
  PS_FORMATS,
  VALIDATE_FORMATS,
  type ValidateFormat,
} from './commands/output-formats.js';
import type { ProjectAddOptions } from './commands/project.js';
import type { PsOptions } from './commands/ps.js';
import type { SecretDeleteOptions } from './commands/secret.js';
import type { ServerOptions } from './commands/server.js';
import type { SshProxyOptions } from './commands/ssh-proxy.js';
import type { StopOptions } from './commands/stop.js';
import type { VolumeDeleteOptions, VolumeListOptions } from './commands/volume.js';
import { type CliIo, processIo, red } from './io.js';

/** Set by the bundled build (scripts/bundle.mjs), which has no package.json beside it to read. */
declare const __DSTACK_CLI_VERSION__: string | undefined;

/** The version of @dstack/cli. */
export const VERSION: string =
  typeof __DSTACK_CLI_VERSION__ === 'string'
    ? __DSTACK_CLI_VERSION__
    : (createRequire(import.meta.url)('../package.json') as { version: string }).version;

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
      const { reportError } = await import('./output/report-error.js');
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
      const { validateCommand } = await import('./commands/validate.js');
      result.exitCode = await validateCommand(options, io);
    });

  program
    .command('server')
    .description('start the dstack server and point the main project at it')
    .option('--host <host>', 'the interface to listen on')
    .option('-p, --port <port>', 'the port to listen on')
    .addOption(yesOption())
    .action((options: ServerOptions) =>
      run(async () => (await import('./commands/server.js')).serverCommand(options, io)),
    );

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
    .action((options: ProjectAddOptions) =>
      run(async () => (await import('./commands/project.js')).projectAddCommand(options, io)),
    );
  project
    .command('list')
    .description('list the projects')
    .action(() => run(async () => (await import('./commands/project.js')).projectListCommand(io)));
  project
    .command('set-default')
    .description('make a project the default')
    .argument('<name>', 'the project name')
    .action((name: string) =>
      run(async () => (await import('./commands/project.js')).projectSetDefaultCommand(name, io)),
    );
  project
    .command('delete')
    .description('remove a project from the configuration')
    .argument('<name>', 'the project name')
    .addOption(yesOption())
    .action((name: string, options: { yes?: boolean }) =>
      run(async () => (await import('./commands/project.js')).projectDeleteCommand(name, options, io)),
    );

  program
    .command('init')
    .description(
      "store the credentials jobs clone this directory's Git repo with (a token, an SSH key, or the git credential helper's)",
    )
    .option('-t, --token <token>', 'a token for the HTTPS URL of a private repo')
    .option('--git-identity <path>', 'a private SSH key for the SSH URL of a private repo')
    .addOption(projectOption())
    .action((options: InitOptions) =>
      run(async () => (await import('./commands/init.js')).initCommand(options, io)),
    );

  const apply = program
    .command('apply')
    .description('plan and submit a run (and attach to it), or apply a fleet, a volume or a gateway')
    .argument('[run_args...]', `run arguments, available in commands as \${{ run.args }}; put them after --`)
    .requiredOption('-f, --file <file>', 'the configuration file (.dstack.yml)')
    .addOption(yesOption())
    .option('-d, --detach', 'submit and exit without attaching')
    .option('--force', 're-create even when nothing changed')
    .option('-t, --token <token>', "a token for the run's private repo (stored as dstack init --token does)")
    .option(
      '--git-identity <path>',
      "a private SSH key for the run's private repo (as dstack init --git-identity)",
    )
    .addOption(projectOption());
  // dstack's run options (`cli/services/configurators/run.py`, `resources.py`, `profile.py`).
  apply
    .optionsGroup('Run options:')
    .option('-n, --name <name>', 'the run name (overrides the file); if unset, a random name is assigned')
    .option('--max-offers <count>', 'number of offers to show in the run plan', '3')
    .option(
      '-e, --env <KEY[=VALUE]>',
      'an environment variable; a bare KEY takes its value from this shell (repeatable)',
      collect,
    )
    .option('--cpu <spec>', 'request CPU for the run: ARCH:COUNT (all parts optional), e.g. 4.., arm:8')
    .option(
      '--gpu <spec>',
      'request GPU for the run: NAME:COUNT:MEMORY (all parts optional), e.g. A100:80GB:2',
    )
    .option('--memory <range>', 'request the size range of RAM, e.g. 128GB..256GB')
    .option('--disk <range>', 'request the size range of disk, e.g. 100GB..')
    .optionsGroup('Profile:')
    .addOption(
      new Option(
        '--profile <name>',
        'the profile of .dstack/profiles.yml or ~/.dstack/profiles.yml (default: $DSTACK_PROFILE, else the default one)',
      ),
    )
    .option(
      '--no-profile',
      'do not load any profile (the default when $DSTACK_NO_PROFILE is set and --profile is not)',
    )
    .option('--max-price <price>', 'the maximum price per hour, in dollars')
    .option('--max-duration <duration>', 'the maximum duration of the run, e.g. 2h, or off')
    .option('-b, --backend <name>', 'a backend to try for provisioning (repeatable)', collect)
    .option('-r, --region <name>', 'a region to try for provisioning (repeatable)', collect)
    .option('--instance-type <name>', 'a cloud-specific instance type to try (repeatable)', collect)
    .optionsGroup('Fleets:')
    .option('--fleet <name>', 'consider only this fleet (repeatable)', collect)
    .addOption(
      new Option(
        '-R, --reuse',
        'reuse an existing instance from a fleet (do not provision a new one)',
      ).conflicts(['dontDestroy', 'idleDuration']),
    )
    .addOption(
      new Option(
        '--dont-destroy',
        'do not destroy the instance after the run finishes (if the run provisions one)',
      ).conflicts('idleDuration'),
    )
    .option(
      '--idle-duration <duration>',
      'time to wait before destroying the idle instance (if the run provisions one)',
    )
    .optionsGroup('Spot policy:')
    .addOption(
      new Option('--spot', 'consider only spot instances').conflicts(['onDemand', 'spotAuto', 'spotPolicy']),
    )
    .addOption(
      new Option('--on-demand', 'consider only on-demand instances').conflicts(['spotAuto', 'spotPolicy']),
    )
    .addOption(
      new Option('--spot-auto', 'consider both spot and on-demand instances').conflicts('spotPolicy'),
    )
    .addOption(
      new Option('--spot-policy <policy>', 'one of spot, on-demand, auto').choices([
        'spot',
        'on-demand',
        'auto',
      ]),
    )
    .optionsGroup('Retry policy:')
    .addOption(new Option('--retry', 'retry the run on failures (for an hour)').conflicts('retryDuration'))
    .option('--no-retry', 'do not retry the run')
    .option('--retry-duration <duration>', 'retry the run on failures for this long')
    .action((runArgs: string[], options: ApplyOptions) =>
      run(async () => (await import('./commands/apply.js')).applyCommand({ ...options, runArgs }, io)),
    );

  program
    .command('ps')
    .description('list runs')
    .option('-a, --all', 'include finished runs')
    .option('-v, --verbose', 'add resources, instance type, service URL and error')
    .option('-w, --watch', 'refresh the table until Ctrl-C')
    .addOption(new Option('--format <format>', 'output format').choices(PS_FORMATS).default('table'))
    .addOption(projectOption())
    .action((options: PsOptions) =>
      run(async () => (await import('./commands/ps.js')).psCommand(options, io)),
    );

  program
    .command('event')
    .description("print the project's events (runs, jobs, fleets, instances, volumes), oldest first")
    .argument('[action]', 'list (the default)')
    .option('-w, --watch', 'keep printing new events until Ctrl-C')
    .option(
      '--since <time>',
      'only events after this: a duration back from now (10s, 5m, 1d) or an RFC 3339 time; default: the last 100',
    )
    .option('--run <name>', 'events of the run and its jobs (as --within-run)')
    .option('--fleet <name>', 'events of the fleet and its instances (as --within-fleet)')
    .option('--target-fleet <name>', 'only events that target this fleet (repeatable)', collect)
    .option('--target-run <name>', 'only events that target this run (repeatable)', collect)
    .option('--target-volume <name>', 'only events that target this volume (repeatable)', collect)
    .option('--target-gateway <name>', 'only events that target this gateway (repeatable)', collect)
    .option('--within-fleet <name>', 'only events of this fleet or its instances (repeatable)', collect)
    .option('--within-run <name>', 'only events of this run or its jobs (repeatable)', collect)
    .option(
      '--include-target-type <type>',
      'only events with a target of this type: project, user, fleet, instance, run, job, volume, gateway, secret (repeatable)',
      collect,
    )
    .addOption(projectOption())
    .action((action: string | undefined, options: EventOptions) =>
      run(async () => (await import('./commands/event.js')).eventCommand(action, options, io)),
    );

  program
    .command('logs')
    .description("print a run's logs")
    .argument('<run>', 'the run name')
    .option('-f, --follow', 'keep printing until the run finishes')
    .addOption(projectOption())
    .action((runName: string, options: LogsOptions) =>
      run(async () => (await import('./commands/logs.js')).logsCommand(runName, options, io)),
    );

  program
    .command('metrics')
    .description("show a run's CPU, memory and GPU use")
    .argument('<run>', 'the run name')
    .option('-w, --watch', 'refresh every few seconds until the run finishes')
    .addOption(projectOption())
    .action((runName: string, options: MetricsOptions) =>
      run(async () => (await import('./commands/metrics.js')).metricsCommand(runName, options, io)),
    );

  program
    .command('attach')
    .description("configure `ssh RUN`, forward the run's ports to localhost and stay until Ctrl-C")
    .argument('<run>', 'the run name')
    .addOption(projectOption())
    .action((runName: string, options: AttachCommandOptions) =>
      run(async () => (await import('./commands/attach.js')).attachCommand(runName, options, io)),
    );

  program
    .command('ssh-proxy')
    .description("join stdin/stdout to a job's SSH server (OpenSSH's ProxyCommand for `ssh RUN`)")
    .argument('<run>', 'the run name')
    .option('--job <number>', 'the job number', '0')
    .option('--replica <number>', 'the replica number', '0')
    .addOption(projectOption())
    .action((runName: string, options: SshProxyOptions) =>
      run(async () =>
        (await import('./commands/ssh-proxy.js')).sshProxyCommand(runName, options, {
          input: process.stdin,
          output: process.stdout,
        }),
      ),
    );

  program
    .command('stop')
    .description('stop a run')
    .argument('<run>', 'the run name')
    .option('-x, --abort', 'terminate at once instead of stopping gracefully')
    .addOption(yesOption())
    .addOption(projectOption())
    .action((runName: string, options: StopOptions) =>
      run(async () => (await import('./commands/stop.js')).stopCommand(runName, options, io)),
    );

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
    .action((options: OfferOptions) =>
      run(async () => (await import('./commands/offer.js')).offerCommand(options, io)),
    );

  const fleet = program.command('fleet').description('manage fleets');
  fleet
    .command('list')
    .description('list fleets and their instances')
    .addOption(projectOption())
    .action((options: { project?: string }) =>
      run(async () => (await import('./commands/fleet.js')).fleetListCommand(options, io)),
    );
  fleet
    .command('delete')
    .description('delete a fleet and terminate its instances')
    .argument('<name>', 'the fleet name')
    .addOption(yesOption())
    .addOption(projectOption())
    .action((name: string, options: FleetDeleteOptions) =>
      run(async () => (await import('./commands/fleet.js')).fleetDeleteCommand(name, options, io)),
    );

  const volume = program.command('volume').description('manage volumes');
  volume
    .command('list')
    .description('list volumes')
    .option('-v, --verbose', 'add region, attachments and error')
    .addOption(projectOption())
    .action((options: VolumeListOptions) =>
      run(async () => (await import('./commands/volume.js')).volumeListCommand(options, io)),
    );
  volume
    .command('delete')
    .description('delete a volume (refused while a run holds it)')
    .argument('<name>', 'the volume name')
    .addOption(yesOption())
    .addOption(projectOption())
    .action((name: string, options: VolumeDeleteOptions) =>
      run(async () => (await import('./commands/volume.js')).volumeDeleteCommand(name, options, io)),
    );

  const gateway = program.command('gateway').description('manage gateways');
  gateway
    .command('list')
    .description('list gateways')
    .addOption(projectOption())
    .action((options: ProjectOption) =>
      run(async () => (await import('./commands/gateway.js')).gatewayListCommand(options, io)),
    );
  gateway
    .command('delete')
    .description('delete a gateway and terminate its instance')
    .argument('<name>', 'the gateway name')
    .addOption(yesOption())
    .addOption(projectOption())
    .action((name: string, options: GatewayDeleteOptions) =>
      run(async () => (await import('./commands/gateway.js')).gatewayDeleteCommand(name, options, io)),
    );
  gateway
    .command('update')
    .description("make a gateway the project's default, or change its domain")
    .argument('<name>', 'the gateway name')
    .option('--set-default', "make it the project's default gateway")
    .option('--domain <domain>', 'the new wildcard domain (services applied afterwards use it)')
    .addOption(projectOption())
    .action((name: string, options: GatewayUpdateOptions) =>
      run(async () => (await import('./commands/gateway.js')).gatewayUpdateCommand(name, options, io)),
    );

  const secret = program
    .command('secret')
    .description(
      `manage the project's secrets (reference them as \${{ secrets.NAME }} in env and registry_auth)`,
    )
    .addOption(projectOption())
    .action((options: { project?: string }) =>
      run(async () => (await import('./commands/secret.js')).secretListCommand(options, io)),
    );
  secret
    .command('list')
    .description('list the secrets (names only)')
    .addOption(projectOption())
    .action((options: { project?: string }) =>
      run(async () => (await import('./commands/secret.js')).secretListCommand(options, io)),
    );
  secret
    .command('get')
    .description("show a secret's value (project admins)")
    .argument('<name>', 'the secret name')
    .addOption(projectOption())
    .action((name: string, options: { project?: string }) =>
      run(async () => (await import('./commands/secret.js')).secretGetCommand(name, options, io)),
    );
  secret
    .command('set')
    .description('create a secret or update its value (project admins)')
    .argument('<name>', 'the secret name')
    .argument('<value>', 'the secret value')
    .addOption(projectOption())
    .action((name: string, value: string, options: { project?: string }) =>
      run(async () => (await import('./commands/secret.js')).secretSetCommand(name, value, options, io)),
    );
  secret
    .command('delete')
    .description('delete a secret (project admins)')
    .argument('<name>', 'the secret name')
    .addOption(yesOption())
    .addOption(projectOption())
    .action((name: string, options: SecretDeleteOptions) =>
      run(async () => (await import('./commands/secret.js')).secretDeleteCommand(name, options, io)),
    );

  program
    .command('delete')
    .description('delete the run, fleet or volume a configuration file names')
    .requiredOption('-f, --file <file>', 'the configuration file (.dstack.yml)')
    .addOption(yesOption())
    .addOption(projectOption())
    .action((options: DeleteOptions) =>
      run(async () => (await import('./commands/delete.js')).deleteCommand(options, io)),
    );

  program
    .command('completion')
    .description("generate shell completion scripts (bash, zsh), answered as dstack's CLI answers them")
    .addArgument(
      new Argument('<shell>', 'the shell to generate the completion script for').choices(['bash', 'zsh']),
    )
    .action(async () => {
      const { COMPLETION_SCRIPT } = await import('./completion/completion-script.js');
      io.stdout(COMPLETION_SCRIPT);
    });

  return program;
}

/** Runs the CLI with `argv` (as `process.argv`) and returns the exit code. */
export async function run(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  const result = { exitCode: 0 };
  const program = createProgram(io, result);
  // The completion script calls back with `_ARGCOMPLETE` set: answer it instead of running a command.
  if (process.env._ARGCOMPLETE) {
    return (await import('./completion/complete.js')).answerCompletion(program);
  }
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
