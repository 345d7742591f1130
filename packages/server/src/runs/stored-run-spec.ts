/**
 * The run spec as the server stores it: validated with defaults, the profile merged in, the run
 * name checked, and the user's SSH key when the client sent none. Planning and applying share it.
 */

import {
  ConfigurationError,
  fromWireBackendTypes,
  isValidResourceName,
  RESOURCE_NAME_RULE,
  RUN_PRIORITY_DEFAULT,
  type RunConfiguration,
  type RunSpec,
  validateConfigurationOfType,
} from '@dstack/core';
import { withUserSshKey } from '../accounts/user-ssh-keys.js';
import type { AppContext } from '../context.js';
import { runSpecColumn, type StoredRunSpec } from '../db/json-columns.js';
import type { UsersTable } from '../db/schema.js';
import { dropUnsetNulls, mergeProfileUnder } from '../http/explicit-nulls.js';
import { serviceConfigurationOf } from '../services/service-spec.js';

/** Validates the configuration (defaults applied) and fixes the run name: the spec as it is stored. */
export function normalizeRunSpec(runSpec: RunSpec): StoredRunSpec {
  const validated = validateConfigurationOfType(
    mergeProfileUnder(dropUnsetNulls(runSpec.configuration), runSpec.profile),
    ['task', 'service', 'dev-environment'],
    ['run_spec', 'configuration'],
  );
  const configuration: RunConfiguration = {
    ...validated,
    // As dstack's server: the spec it stores and echoes says the priority the run has.
    priority: validated.priority ?? RUN_PRIORITY_DEFAULT,
    ...(validated.backends === undefined ? {} : { backends: fromWireBackendTypes(validated.backends) }),
  };
  const runName = runSpec.run_name ?? configuration.name ?? null;
  if (runName !== null && !isValidResourceName(runName)) {
    throw new ConfigurationError(`invalid run name: expected ${RESOURCE_NAME_RULE}`, {
      path: ['run_spec', 'run_name'],
    });
  }
  // The profile is merged into the configuration: stored without it, as our CLI sends it.
  return { ...runSpec, profile: null, run_name: runName, configuration };
}

/**
 * The spec with `ssh_key_pub` set: a spec without one (dstack's clients send none unless given
 * `--ssh-identity`) is reachable with the user's own key, as in dstack.
 */
export async function withRunSshKey(
  app: AppContext,
  user: UsersTable,
  runSpec: StoredRunSpec,
): Promise<StoredRunSpec> {
  if (runSpec.ssh_key_pub) return runSpec;
  return { ...runSpec, ssh_key_pub: (await withUserSshKey(app, user)).ssh_public_key ?? null };
}

/** Whether a stored run spec is a service's. */
export function isServiceRun(storedRunSpec: string): boolean {
  return serviceConfigurationOf(runSpecColumn.decode(storedRunSpec, 'runs.run_spec')) !== null;
}
