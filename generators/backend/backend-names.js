/**
 * The names a backend gets from the one the user types (`ExampleXyz`,
 * `exampleXyz`, `example-xyz` or `example xyz` all mean the same backend):
 *
 * - `type`: the words joined in lowercase (`examplexyz`), as dstack spells
 *   `vastai` or `runpod`; the key in `config.yml` and in the discovery map.
 * - `kebab`: the words joined by `-` (`example-xyz`): the directory
 *   `packages/backend-example-xyz`, the package `@dstack/backend-example-xyz`
 *   and the file prefix `example-xyz-`.
 * - `pascal` (`ExampleXyz`) and `camel` (`exampleXyz`) for code identifiers,
 *   `constant` (`EXAMPLE_XYZ`) for constants.
 */

/** Words of a name: case changes and any non-alphanumeric character separate them; digits stay with the word before. */
const WORD = /[A-Z]+(?![a-z])\d*|[A-Z]?[a-z]+\d*|\d+/g;

/** The longest backend type accepted; cloud names are short, and the type shows up in every table. */
export const MAX_BACKEND_TYPE_LENGTH = 30;

/**
 * The problem with `input` as a backend name, or `undefined` when it is valid.
 * @param {unknown} input
 * @returns {string | undefined}
 */
export function backendNameProblem(input) {
  if (typeof input !== 'string' || input.trim() === '') {
    return 'name is required, e.g. ExampleCloud';
  }
  const name = input.trim();
  if (!/^[A-Za-z][A-Za-z0-9 _-]*$/.test(name)) {
    return `name "${name}" must start with a letter and contain only letters, digits, spaces, "-" or "_"`;
  }
  const words = name.match(WORD) ?? [];
  const type = words.join('').toLowerCase();
  if (type.length < 2) return `name "${name}" is too short: the backend type would be "${type}"`;
  if (type.length > MAX_BACKEND_TYPE_LENGTH) {
    return `name "${name}" is too long: the backend type "${type}" has more than ${MAX_BACKEND_TYPE_LENGTH} characters`;
  }
  return undefined;
}

/**
 * @typedef {object} BackendNames
 * @property {string} type lowercase backend type (`examplexyz`)
 * @property {string} kebab kebab-case name (`example-xyz`)
 * @property {string} pascal PascalCase name (`ExampleXyz`)
 * @property {string} camel camelCase name (`exampleXyz`)
 * @property {string} constant CONSTANT_CASE name (`EXAMPLE_XYZ`)
 * @property {string} packageName npm package (`@dstack/backend-example-xyz`)
 * @property {string} directory workspace-relative package directory (`packages/backend-example-xyz`)
 */

/**
 * Every name derived from a valid backend name; throws naming the problem otherwise.
 * @param {string} input
 * @returns {BackendNames}
 */
export function backendNames(input) {
  const problem = backendNameProblem(input);
  if (problem !== undefined) throw new Error(problem);
  const words = (input.trim().match(WORD) ?? []).map((word) => word.toLowerCase());
  const capitalized = words.map((word) => word[0].toUpperCase() + word.slice(1));
  const kebab = words.join('-');
  const pascal = capitalized.join('');
  return {
    type: words.join(''),
    kebab,
    pascal,
    camel: pascal[0].toLowerCase() + pascal.slice(1),
    constant: words.join('_').toUpperCase(),
    packageName: `@dstack/backend-${kebab}`,
    directory: `packages/backend-${kebab}`,
  };
}

/**
 * `names` with the package the map of backend packages already lists for this type
 * (`vastai` is `@dstack/backend-vastai`, though `VastAI` would kebab to `vast-ai`):
 * the server, the CLI and `collect` look the type up under that package name.
 * @param {BackendNames} names
 * @param {string} packageName
 * @returns {BackendNames}
 */
export function withListedPackageName(names, packageName) {
  const kebab = packageName.replace(/^@dstack\/backend-/, '');
  return { ...names, kebab, packageName, directory: `packages/backend-${kebab}` };
}
