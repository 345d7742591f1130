import type { AnyConfiguration, FleetConfiguration, Run, RunConfiguration, RunSpec } from '@dstack/core';
import type { DstackApiClient } from '../api/client.js';
import type { RepoCredsOptions } from '../code/repo-creds.js';
import { loadProfile, mergeProfileUnder } from '../config/profiles.js';
import type { CliIo } from '../io.js';
import { createColors } from '../output/colors.js';
import { CommandError } from '../output/command-error.js';
import { printOfferWarnings } from '../output/offer-warnings.js';
import { formatOffersTable } from '../output/offers-table.js';
import { printable } from '../output/printable.js';
import { formatRunPlan } from '../output/run-plan.js';
import { expandConfigurationProvider } from '../providers/expand-configuration-provider.js';
import type { SshPortForwarder } from '../ssh/port-forwarder.js';
import { ensureUserSshKey } from '../ssh/user-ssh-key.js';
import { abortOnInterrupt } from './abort-on-interrupt.js';
import { packRunCode, runSpecCodeFields, uploadFileArchives, uploadRepoCode } from './apply-code.js';
import { attachToRun } from './attach-run.js';
import { confirmAction } from './confirm.js';
import { connect, type ProjectOption } from './connect.js';
import { formatFleets } from './fleet.js';
import { readConfigurationSource } from './read-configuration.js';
import { withSshKeyContents } from './read-ssh-keys.js';
import { applyRunOverrides, type RunOverrideOptions } from './run-overrides.js';
import { prepareRunSsh, startRunSsh } from './run-ssh.js';

export interface ApplyOptions
  extends ProjectOption,
    RepoCredsOptions,
    Omit<RunOverrideOptions, 'spotPolicy'> {
  /** The configuration file. */
  file: string;
  /** Do not ask for confirmation. Default false. */
  yes?: boolean;
  /** Submit and exit without attaching. Default false. */
  detach?: boolean;
  /** Re-create the resource even when it did not change. Default false. */
  force?: boolean;
  /** Arguments after `--`, for `${{ run.args }}`. Default none. */
  runArgs?: string[];
  /** Offers shown under the plan (`--max-offers`). Default 3. */
  maxOffers?: string;
  /** `--profile NAME`, or false with `--no-profile`. */
  profile?: string | false;
  spot?: boolean;
  onDemand?: boolean;
  spotAuto?: boolean;
  /** `--spot-policy`. */
  spotPolicy?: string;
}

/** Flags that change only a run; refused with a fleet, volume or gateway rather than ignored. */
const RUN_ONLY_FLAGS: ReadonlyArray<[keyof ApplyOptions, string]> = [
  ['env', '--env'],
  ['gpu', '--gpu'],
  ['cpu', '--cpu'],
  ['memory', '--memory'],
  ['disk', '--disk'],
  ['backend', '--backend'],
  ['region', '--region'],
  ['instanceType', '--instance-type'],
  ['spot', '--spot'],
  ['onDemand', '--on-demand'],
  ['spotAuto', '--spot-auto'],
  ['spotPolicy', '--spot-policy'],
  ['maxPrice', '--max-price'],
  ['maxDuration', '--max-duration'],
  ['fleet', '--fleet'],
  ['reuse', '--reuse'],
  ['dontDestroy', '--dont-destroy'],
  ['idleDuration', '--idle-duration'],
  ['retry', '--retry/--no-retry'],
  ['retryDuration', '--retry-duration'],
  ['profile', '--profile/--no-profile'],
];

function refuseRunOnlyFlags(options: ApplyOptions, type: string): void {
  for (const [key, flag] of RUN_ONLY_FLAGS) {
    const value = options[key];
    if (value === undefined || (Array.isArray(value) && value.length === 0)) continue;
    throw new CommandError(`${flag} applies to runs (task, service, dev-environment), not to a ${type}`);
  }
  if (options.runArgs?.length) {
    throw new CommandError(`run arguments apply to runs (task, service, dev-environment), not to a ${type}`);
  }
}

/** `--spot`, `--on-demand`, `--spot-auto` or `--spot-policy` as dstack's `spot_policy`. */
function spotPolicyOption(options: ApplyOptions): string | undefined {
  if (options.spot) return 'spot';
  if (options.onDemand) return 'on-demand';
  if (options.spotAuto) return 'auto';
  return options.spotPolicy;
}

function offersShown(options: ApplyOptions): number {
  if (options.maxOffers === undefined) return OFFERS_SHOWN;
  const count = Number(options.maxOffers);
  if (!Number.isInteger(count) || count < 0) {
    throw new CommandError(`--max-offers: expected a whole number, got '${options.maxOffers}'`);
  }
  return count;
}

/** Offers printed under the plan; the rest are counted as "and N more". */
const OFFERS_SHOWN = 3;

function isRunConfiguration(configuration: AnyConfiguration): configuration is RunConfiguration {
  return (
    configuration.type === 'task' ||
    configuration.type === 'service' ||
    configuration.type === 'dev-environment'
  );
}

/** Whether attaching to the run also sets up SSH: dev environments, and tasks with `ports`. */
function attachesOverSsh(configuration: RunConfiguration): boolean {
  if (configuration.type === 'dev-environment') return true;
  return configuration.type === 'task' && (configuration.ports?.length ?? 0) > 0;
}

/**
 * `dstack apply -f FILE`: plans, confirms and submits a run (then attaches unless `-d`), or
 * applies a fleet, a volume or a gateway. Returns the exit code: for an attached run, 0 when it is done.
 */
export async function applyCommand(options: ApplyOptions, io: CliIo): Promise<number> {
  const { configuration, text } = await readConfigurationSource(options.file);
  if (!isRunConfiguration(configuration)) refuseRunOnlyFlags(options, configuration.type);
  if (configuration.type === 'fleet') return applyFleet(configuration, options, io);
  if (configuration.type === 'volume') {
    const name = options.name ?? configuration.name;
    return (await import('./volume.js')).applyVolume(
      { ...configuration, ...(name ? { name } : {}) },
      options,
      io,
    );
  }
  if (configuration.type === 'gateway') {
    const name = options.name ?? configuration.name;
    return (await import('./gateway.js')).applyGateway(
      { ...configuration, ...(name ? { name } : {}) },
      options.file,
      options,
      io,
    );
  }
  if (!isRunConfiguration(configuration)) {
    // Every type is handled above; a type core adds later lands here.
    throw new CommandError(
      `${(configuration as { type: string }).type} configurations are not supported yet`,
    );
  }
  // As dstack: the arguments change the configuration, the profile fills what it leaves unset.
  applyRunOverrides(
    configuration,
    { ...options, spotPolicy: spotPolicyOption(options) },
    options.runArgs ?? [],
  );
  const profile = await loadProfile({
    ...(typeof options.profile === 'string' ? { profile: options.profile } : {}),
    noProfile: options.profile === false,
  });
  const merged = mergeProfileUnder(configuration, profile);
  return applyRunConfiguration(merged, text, options, io);
}

async function applyRunConfiguration(
  configuration: RunConfiguration,
  text: string,
  options: ApplyOptions,
  io: CliIo,
): Promise<number> {
  const runName = configuration.name ?? null;
  // The provider module is on this machine, not the server's: its jobs travel in the run spec.
  const providerJobs = await expandConfigurationProvider({
    configuration,
    configurationPath: options.file,
    configurationText: text,
    runName,
  });
  // The runner authorizes this key for `ssh RUN` (and the CLI's own port forwarding).
  const { publicKey } = await ensureUserSshKey();
  // Packed (and checked against the upload limit) before anything is sent to the server.
  const code = await packRunCode(configuration, options.file, options);
  const runSpec: RunSpec = {
    run_name: runName,
    configuration_path: options.file,
    configuration: configuration as RunSpec['configuration'],
    ssh_key_pub: publicKey,
    ...(providerJobs === null ? {} : { provider_jobs: providerJobs }),
    ...runSpecCodeFields(code),
  };
  const client = await connect(options, io);
  // As dstack: file archives go up with the plan (they are named by content), the repo's code
  // once the run is confirmed.
  runSpec.file_archives = await uploadFileArchives(client, code);
  return applyRun(client, configuration, runSpec, options, io, () => uploadRepoCode(client, code));
}

async function applyRun(
  client: DstackApiClient,
  configuration: RunConfiguration,
  runSpec: RunSpec,
  options: ApplyOptions,
  io: CliIo,
  beforeApply: () => Promise<void>,
): Promise<number> {
  const colors = createColors(Boolean(io.stdoutColors));
  // As dstack: `--max-offers` (default 3) is both what the plan asks for and what it shows;
  // `total_offers` still counts them all.
  const shown = offersShown(options);
  const plan = await client.getRunPlan({ run_spec: runSpec, max_offers: shown });
  io.stdout(`${formatRunPlan(plan, configuration, options.file, colors)}\n`);
  const jobPlan = plan.job_plans[0];
  printOfferWarnings(io, jobPlan?.warnings ?? []);
  if (!jobPlan || jobPlan.offers.length === 0) {
    io.stdout('No offers match the requirements.\n');
    for (const exclusion of jobPlan?.exclusions ?? []) {
      io.stdout(
        `  ${exclusion.requirement}: excluded ${exclusion.excluded} offer${exclusion.excluded === 1 ? '' : 's'}\n`,
      );
    }
    return 1;
  }
  io.stdout(`${formatOffersTable(jobPlan.offers, jobPlan.total_offers, { shown, colors })}\n`);
  const displayName = plan.run_spec.run_name ?? runSpec.run_name;
  const question = displayName ? `Submit the run ${printable(displayName)}?` : 'Submit a new run?';
  if (!(await confirmAction(io, question, options.yes))) return 0;
  await beforeApply();
  const run = await client.applyRun({
    plan: { run_spec: plan.run_spec, current_resource: plan.current_resource ?? null },
    force: Boolean(options.force),
  });
  const name = run.run_spec.run_name ?? displayName ?? run.id;
  if (options.detach) {
    io.stdout(`${printable(name)}\n`);
    return 0;
  }
  io.stdout(`Submitted ${printable(name)}\n`);
  // A dev environment is worked in over SSH, and a task's `ports` are forwarded while attached
  // (as dstack does): once the run is running, `dstack attach`'s access while its logs stream.
  const key = attachesOverSsh(configuration) ? await prepareRunSsh(client, name) : undefined;
  let forwarder: SshPortForwarder | undefined;
  const interrupt = abortOnInterrupt();
  try {
    return await attachToRun(client, name, io, {
      signal: interrupt.signal,
      ...(key
        ? {
            onRunning: async (running: Run) => {
              forwarder = await startRunSsh(client, running, name, key, io);
            },
          }
        : {}),
    });
  } finally {
    forwarder?.close();
    interrupt.dispose();
  }
}

async function applyFleet(
  configuration: FleetConfiguration,
  options: ApplyOptions,
  io: CliIo,
): Promise<number> {
  const client = await connect(options, io);
  const name = options.name ?? configuration.name;
  const question = name ? `Apply the fleet ${name}?` : 'Create a new fleet?';
  if (!(await confirmAction(io, question, options.yes))) return 0;
  const fleetConfiguration = { ...(await withSshKeyContents(configuration)), ...(name ? { name } : {}) };
  const fleet = await client.applyFleet({
    plan: { spec: { configuration: fleetConfiguration } },
    force: Boolean(options.force),
  });
  io.stdout(formatFleets([fleet], createColors(Boolean(io.stdoutColors))));
  return 0;
}
