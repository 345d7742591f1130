/**
 * The names users give to what they create, one rule per kind, shared by the configuration
 * schemas (YAML), the API request bodies and the server. Every rule refuses control characters,
 * `/`, spaces and over-long names, so a name is safe in a path, a terminal and a cloud tag.
 */
import * as z from 'zod';

/**
 * Runs, fleets, volumes, gateways and instances: dstack's `is_valid_dstack_resource_name`,
 * the rule that makes a name valid in every cloud backend.
 */
export const RESOURCE_NAME_PATTERN = /^[a-z][a-z0-9-]{1,40}$/;
export const RESOURCE_NAME_RULE = '2-41 lowercase letters, digits and dashes, starting with a letter';

/** Projects: as dstack allows (letters of either case and `_`), starting with a letter or digit. */
export const PROJECT_NAME_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9_-]{0,49}$/;
export const PROJECT_NAME_RULE = '1-50 letters, digits, "-" or "_", starting with a letter or digit';

/** Users: dstack's `is_valid_username` (`^[a-zA-Z0-9-_]{1,60}$`). */
export const USERNAME_PATTERN = /^[a-zA-Z0-9_-]{1,60}$/;
export const USERNAME_RULE = '1-60 letters, digits, "-" or "_"';

/** Secrets: dstack's `_SECRET_NAME_REGEX` (`^[A-Za-z0-9-_]{1,200}$`). */
export const SECRET_NAME_PATTERN = /^[A-Za-z0-9_-]{1,200}$/;
export const SECRET_NAME_RULE = '1-200 letters, digits, "-" or "_"';

/**
 * Repo ids (`repos/init`, a run spec's `repo_id`) and repo names: the client chooses them (the
 * CLI makes an id of the repo's or the directory's name and a hash), so a space or any letter
 * is fine, but no control or format character (terminal escapes, bidi overrides, lone
 * surrogates): the id and name reach terminals (`dstack ps`), logs and the job's environment.
 * 300 characters leave room for a directory name of 255 and the CLI's hash suffix.
 */
export const REPO_ID_PATTERN = /^[^\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]{1,300}$/u;
export const REPO_ID_RULE = '1-300 characters, none of them a control or format character';

export function isValidResourceName(name: string): boolean {
  return RESOURCE_NAME_PATTERN.test(name);
}

export function isValidProjectName(name: string): boolean {
  return PROJECT_NAME_PATTERN.test(name);
}

export function isValidSecretName(name: string): boolean {
  return SECRET_NAME_PATTERN.test(name);
}

export function isValidRepoId(id: string): boolean {
  return REPO_ID_PATTERN.test(id);
}

export function isValidUsername(name: string): boolean {
  return USERNAME_PATTERN.test(name);
}

// The messages never repeat the value: it may be a megabyte long or hold terminal escapes.

/** The `name` of a run, fleet, volume or gateway. */
export const resourceNameSchema = z
  .string()
  .regex(RESOURCE_NAME_PATTERN, { error: `expected a name of ${RESOURCE_NAME_RULE}` });

/** A project's name. */
export const projectNameSchema = z
  .string()
  .regex(PROJECT_NAME_PATTERN, { error: `project name must be ${PROJECT_NAME_RULE}` });

/** A user's name. */
export const usernameSchema = z
  .string()
  .regex(USERNAME_PATTERN, { error: `username must be ${USERNAME_RULE}` });

/** A secret's name. */
export const secretNameSchema = z
  .string()
  .regex(SECRET_NAME_PATTERN, { error: `secret name must be ${SECRET_NAME_RULE}` });

/** A repo's id (`repo_id`). */
export const repoIdSchema = z.string().regex(REPO_ID_PATTERN, { error: `repo id must be ${REPO_ID_RULE}` });

/** A remote repo's name (`repo_name`): the same rule as its id. */
export const repoNameSchema = z
  .string()
  .regex(REPO_ID_PATTERN, { error: `repo name must be ${REPO_ID_RULE}` });
