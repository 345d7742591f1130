/**
 * A job's command line as dstack 0.21's job configurator makes it (`_commands`, `_shell` and
 * `_dstack_image_commands` in dstack's `services/jobs/configurators/base.py`): the job spec's
 * `commands` is the argv the runner executes, not a list of shell lines.
 *
 * - `entrypoint:` (Docker's form): the entrypoint split as a shell would, then `commands` as
 *   separate arguments, nothing joined or added.
 * - Otherwise the shell commands joined with ` && ` (a command ending in `&` wrapped in `{ }`)
 *   run by `<shell> -i -c`: `shell:` (`sh` and `bash` are in /bin, else an absolute path), by
 *   default `/bin/bash` in dstack's base image and `/bin/sh` in any other.
 * - In dstack's base image the commands first make the venv of `python:` with the image's `uv`
 *   and activate it (also for later SSH sessions, through /dstack/profile); with `docker: true`
 *   they first start Docker's daemon (`start-dockerd` of dstack's dind image).
 */
import type { RunConfiguration } from '@dstack/core';
import { DEFAULT_IMAGE_PYTHON } from '@dstack/core/agent-protocol';

/** Where dstack's base image keeps what every user of the job shares. */
const DSTACK_DIR = '/dstack';
const DSTACK_PROFILE_PATH = `${DSTACK_DIR}/profile`;

/** The fields of a configuration the command line depends on. */
export type CommandFields = Pick<RunConfiguration, 'image' | 'entrypoint' | 'shell' | 'docker' | 'python'>;

/**
 * The job's argv: `shellCommands` (a task's `commands`, a dev environment's init and keep-alive)
 * in the configuration's shell, or after its entrypoint. Empty when there is neither: the image's
 * own command, which this server does not read.
 */
export function jobCommandLine(configuration: CommandFields, shellCommands: readonly string[]): string[] {
  return entrypointOr(configuration, shellCommands, () => [
    shellOf(configuration),
    '-i',
    '-c',
    joinShellCommands([...dstackImageCommands(configuration), ...shellCommands]),
  ]);
}

/**
 * The argv of a job run as a process on its host, without a container (job-runtime.ts: a Slurm
 * allocation, a shim's process runtime on the local backend or a host without Docker): the host is no image of dstack's, so nothing of
 * the base image is set up (no venv, no dockerd), the shell is `/bin/sh` unless `shell:` names
 * one, and it is not interactive: the runner gives the job no terminal, and a host's own rc files
 * are not the job's.
 */
export function hostJobCommandLine(configuration: CommandFields, shellCommands: readonly string[]): string[] {
  return entrypointOr(configuration, shellCommands, () => [
    configuration.shell == null ? '/bin/sh' : shellPath(configuration.shell),
    '-c',
    joinShellCommands([...shellCommands]),
  ]);
}

/** The entrypoint's words and then the commands; else the shell's form of the commands, if any. */
function entrypointOr(
  configuration: CommandFields,
  shellCommands: readonly string[],
  shellForm: () => string[],
): string[] {
  if (configuration.entrypoint != null) {
    return [...splitShellWords(configuration.entrypoint), ...shellCommands];
  }
  return shellCommands.length === 0 ? [] : shellForm();
}

/** `sh` → `/bin/sh`; an absolute path as it is (the configuration's schema refuses anything else). */
function shellPath(shell: string): string {
  return shell.startsWith('/') ? shell : `/bin/${shell}`;
}

function shellOf(configuration: CommandFields): string {
  if (configuration.shell != null) return shellPath(configuration.shell);
  // No `image:`: dstack's base image, or its dind image for `docker: true`; both have bash.
  return configuration.image == null ? '/bin/bash' : '/bin/sh';
}

/** What dstack runs before the user's commands in its own images. */
function dstackImageCommands(configuration: CommandFields): string[] {
  if (configuration.docker === true) return ['start-dockerd'];
  if (configuration.image != null || configuration.entrypoint != null) return [];
  const python = configuration.python ?? DEFAULT_IMAGE_PYTHON;
  return [
    `eval $(echo 'export DSTACK_VENV_DIR=${DSTACK_DIR}/venv' | sudo tee -a ${DSTACK_PROFILE_PATH})`,
    // The venv belongs to the job's user, so that a non-root user can install into it.
    'sudo rm -rf $DSTACK_VENV_DIR',
    'sudo mkdir $DSTACK_VENV_DIR',
    'sudo chown $(id -u):$(id -g) $DSTACK_VENV_DIR',
    `uv venv -q --prompt dstack -p ${python} --seed $DSTACK_VENV_DIR`,
    `eval $(echo '. $DSTACK_VENV_DIR/bin/activate' | sudo tee -a ${DSTACK_PROFILE_PATH})`,
  ];
}

/** dstack's `_join_shell_commands`: ` && ` between them, a background command kept in `{ }`. */
function joinShellCommands(commands: string[]): string {
  return commands
    .map((command) => command.trim())
    .map((command) => (command.endsWith('&') ? `{ ${command} }` : command))
    .join(' && ');
}

/**
 * Python's `shlex.split` (POSIX mode), which dstack applies to `entrypoint`: words split on
 * whitespace, single quotes literal, double quotes with `\` escaping `\ " $ \``, a backslash
 * outside quotes escaping the next character (no comments: `#` is a character like any other).
 */
export function splitShellWords(text: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  let index = 0;
  const fail = (what: string) => {
    throw new ShellWordsError(`${what} in entrypoint: ${text}`);
  };
  while (index < text.length) {
    const char = text[index]!;
    if (/\s/.test(char)) {
      if (word !== null) words.push(word);
      word = null;
      index += 1;
    } else if (char === "'") {
      const end = text.indexOf("'", index + 1);
      if (end < 0) fail('No closing quotation');
      word = (word ?? '') + text.slice(index + 1, end);
      index = end + 1;
    } else if (char === '"') {
      let value = '';
      index += 1;
      while (index < text.length && text[index] !== '"') {
        const next = text[index + 1];
        if (text[index] === '\\' && next !== undefined && '\\"$`'.includes(next)) {
          value += next;
          index += 2;
        } else {
          value += text[index];
          index += 1;
        }
      }
      if (index >= text.length) fail('No closing quotation');
      word = (word ?? '') + value;
      index += 1;
    } else if (char === '\\') {
      if (index + 1 >= text.length) fail('No escaped character');
      word = (word ?? '') + text[index + 1];
      index += 2;
    } else {
      word = (word ?? '') + char;
      index += 1;
    }
  }
  if (word !== null) words.push(word);
  return words;
}

/** An entrypoint a shell could not split (an open quote): the configuration's mistake. */
export class ShellWordsError extends Error {}
