/**
 * Answers the completion script of `dstack completion` (argcomplete's protocol): the shell runs
 * `dstack` with `_ARGCOMPLETE=1`, the line in `COMP_LINE` and the cursor in `COMP_POINT`; the
 * candidates for the word under the cursor go to fd 8 (or `_ARGCOMPLETE_STDOUT_FILENAME`),
 * separated by `_ARGCOMPLETE_IFS` (default `\v`). Candidates come from the command tree:
 * subcommands, options, and an option's choices.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import type { Command, Option } from 'commander';
import { completeNames } from './name-completers.js';

/** The words before the cursor, and the (partial) word under it; quotes are honoured simply. */
export function splitCompletionLine(line: string, point: number): { words: string[]; current: string } {
  const before = line.slice(0, point);
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  for (const char of before) {
    if (quote) {
      if (char === quote) quote = undefined;
      else word += char;
    } else if (char === '"' || char === "'") {
      quote = char;
      inWord = true;
    } else if (char === ' ' || char === '\t' || char === '\n') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += char;
      inWord = true;
    }
  }
  return { words, current: word };
}

function visibleCommands(command: Command): Command[] {
  return command.commands.filter((sub) => !(sub as unknown as { _hidden?: boolean })._hidden);
}

function optionFlags(option: Option): string[] {
  return [option.short, option.long].filter((flag): flag is string => Boolean(flag));
}

function findOption(command: Command, flag: string): Option | undefined {
  return command.options.find((option) => optionFlags(option).includes(flag));
}

function countOperands(command: Command, words: readonly string[]): number {
  const start = words.lastIndexOf(command.name());
  let count = 0;
  let skipNext = false;
  for (const word of words.slice(start + 1)) {
    if (skipNext) {
      skipNext = false;
    } else if (word.startsWith('-')) {
      const option = findOption(command, word.split('=')[0]!);
      skipNext = Boolean(option && (option.required || option.optional) && !word.includes('='));
    } else {
      count += 1;
    }
  }
  return count;
}

function commandPath(command: Command): string {
  const names: string[] = [];
  for (let at: Command | null = command; at?.parent; at = at.parent) names.unshift(at.name());
  return names.join(' ');
}

/** Candidate words with a description each (zsh shows it). */
export async function completionCandidates(
  program: Command,
  words: readonly string[],
  current: string,
): Promise<Map<string, string>> {
  let command = program;
  let expectsValueOf: Option | undefined;
  let project: string | undefined;
  for (const word of words.slice(1)) {
    if (expectsValueOf) {
      if (expectsValueOf.long === '--project') project = word;
      expectsValueOf = undefined;
      continue;
    }
    if (word.startsWith('-')) {
      const option = findOption(command, word.split('=')[0]!);
      if (option && (option.required || option.optional) && !word.includes('=')) expectsValueOf = option;
      continue;
    }
    const sub = visibleCommands(command).find((candidate) => candidate.name() === word);
    if (sub) command = sub;
  }
  const candidates = new Map<string, string>();
  if (expectsValueOf) {
    const values =
      expectsValueOf.long === '--project'
        ? await completeNames(commandPath(command), 'project-option', project)
        : (expectsValueOf.argChoices ?? []);
    for (const value of values) if (value.startsWith(current)) candidates.set(value, '');
    return candidates;
  }
  if (current.startsWith('-')) {
    for (const option of [...command.options, command.createHelp().visibleOptions(command)].flat()) {
      for (const flag of optionFlags(option)) {
        if (flag.startsWith(current)) candidates.set(flag, option.description);
      }
    }
    return candidates;
  }
  for (const sub of visibleCommands(command)) {
    if (sub.name().startsWith(current)) candidates.set(sub.name(), sub.description());
  }
  // The command's positional argument with choices (`completion <shell>`); operands given so far
  // are the words after the command's own name that are not options or their values.
  const operands = countOperands(command, words);
  const argument = command.registeredArguments[operands];
  for (const choice of argument?.argChoices ?? []) {
    if (choice.startsWith(current)) candidates.set(choice, argument?.description ?? '');
  }
  if (operands === 0 && argument && !argument.argChoices) {
    const names = await completeNames(
      commandPath(command),
      'argument',
      project ?? process.env.DSTACK_PROJECT,
    );
    for (const name of names) if (name.startsWith(current)) candidates.set(name, '');
  }
  return candidates;
}

/** Escapes what bash would split on, as argcomplete's `quote_completions` (unquoted words). */
function escapeForShell(word: string, zsh: boolean): string {
  const special = `\\();<>|&!\`$*?[]{} \t\n"'${zsh ? ':' : ''}`;
  let escaped = '';
  for (const char of word) escaped += special.includes(char) ? `\\${char}` : char;
  return escaped;
}

/**
 * Writes the candidates for the line in the environment, as argcomplete does. Returns the exit
 * code (1 when the shell did not give what the protocol needs).
 */
export async function answerCompletion(
  program: Command,
  environment: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const line = environment.COMP_LINE;
  const point = Number(environment.COMP_POINT);
  const ifs = environment._ARGCOMPLETE_IFS ?? '\u000b';
  if (line === undefined || !Number.isInteger(point) || ifs.length !== 1) return 1;
  const zsh = environment._ARGCOMPLETE_SHELL === 'zsh';
  const { words, current } = splitCompletionLine(line, point);
  const candidates = await completionCandidates(program, words, current);
  let completions = [...candidates.keys()].map((word) => escapeForShell(word, zsh));
  if (
    environment._ARGCOMPLETE_SUPPRESS_SPACE !== '1' &&
    completions.length === 1 &&
    !/[=/:]$/.test(completions[0]!)
  ) {
    completions = [`${completions[0]} `];
  }
  if (zsh) {
    const descriptions = [...candidates.values()];
    completions = completions.map((word, index) => `${word}:${descriptions[index] ?? ''}`);
  }
  const output = completions.join(ifs);
  const file = environment._ARGCOMPLETE_STDOUT_FILENAME;
  if (file) {
    const descriptor = openSync(file, 'w');
    writeSync(descriptor, output);
    closeSync(descriptor);
  } else {
    writeSync(8, output);
  }
  return 0;
}
