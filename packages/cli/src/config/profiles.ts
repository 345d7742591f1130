/**
 * `.dstack/profiles.yml` of the project (the working directory) and `~/.dstack/profiles.yml`,
 * loaded and merged as dstack does (`api/utils.py` `load_profile`, `cli/services/profile.py`
 * `load_profile_from_args`): the project's file first, then the home one; without a name, the
 * profile marked `default: true`; a profile fills only what the configuration leaves unset.
 */
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { type Profile, parseProfilesFile } from '@dstack/core';
import { CommandError } from '../output/command-error.js';

export const PROFILE_VARIABLE = 'DSTACK_PROFILE';
export const NO_PROFILE_VARIABLE = 'DSTACK_NO_PROFILE';

export interface ProfileOptions {
  /** `--profile NAME`. Default: `DSTACK_PROFILE`, else the `default: true` profile. */
  profile?: string;
  /** `--no-profile`: load none. Default: `DSTACK_NO_PROFILE`. */
  noProfile?: boolean;
}

/** The text of `directory/profiles.yml`, else `profiles.yaml`, with its path; undefined when neither exists. */
async function readProfilesText(directory: string): Promise<{ path: string; text: string } | undefined> {
  for (const name of ['profiles.yml', 'profiles.yaml']) {
    const path = join(directory, name);
    try {
      return { path, text: await readFile(path, 'utf8') };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new CommandError(`${path}: cannot read: ${(error as Error).message}`, { cause: error });
      }
    }
  }
  return undefined;
}

async function profileIn(directory: string, name: string | undefined): Promise<Profile | undefined> {
  const file = await readProfilesText(directory);
  if (!file) return undefined;
  const { profiles } = parseProfilesFile(file.text, { path: file.path });
  return name === undefined
    ? profiles.find((profile) => profile.default)
    : profiles.find((p) => p.name === name);
}

/** dstack's `environ.get_bool`. */
function booleanVariable(environment: NodeJS.ProcessEnv, name: string): boolean {
  const text = environment[name];
  if (text === undefined) return false;
  const normalized = text.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(normalized)) return true;
  if (['', '0', 'false', 'no', 'off'].includes(normalized)) return false;
  throw new CommandError(`${name}: expected a boolean (true/false, 1/0, yes/no, on/off), got '${text}'`);
}

/**
 * The profile to apply: none with `--no-profile` (or `DSTACK_NO_PROFILE` when `--profile` is not
 * given), else the named one (`--profile`, `DSTACK_PROFILE`) or the default one. A name found in
 * neither file is dstack's `No such profile: NAME`.
 */
export async function loadProfile(
  options: ProfileOptions,
  projectDirectory: string = process.cwd(),
  environment: NodeJS.ProcessEnv = process.env,
): Promise<Profile | undefined> {
  if (options.profile !== undefined && options.noProfile) {
    throw new CommandError('--profile and --no-profile exclude each other');
  }
  if (options.noProfile) return undefined;
  if (options.profile === undefined && booleanVariable(environment, NO_PROFILE_VARIABLE)) return undefined;
  const name = options.profile ?? (environment[PROFILE_VARIABLE] || undefined);
  const homeDirectory = join(environment.HOME || homedir(), '.dstack');
  const profile =
    (await profileIn(join(projectDirectory, '.dstack'), name)) ?? (await profileIn(homeDirectory, name));
  if (profile === undefined && name !== undefined) throw new CommandError(`No such profile: ${name}`);
  return profile;
}

/** The configuration with the profile's parameters under it: the configuration's own win. */
export function mergeProfileUnder<Configuration extends object>(
  configuration: Configuration,
  profile: Profile | undefined,
): Configuration {
  if (!profile) return configuration;
  const { name: _name, default: _default, ...parameters } = profile;
  const merged: Record<string, unknown> = { ...(configuration as Record<string, unknown>) };
  for (const [field, value] of Object.entries(parameters)) {
    if (value !== undefined && merged[field] === undefined) merged[field] = value;
  }
  return merged as Configuration;
}
