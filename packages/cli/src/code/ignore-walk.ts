/**
 * The files of a directory that are not ignored, as dstack packs a directory (the `ignore` crate
 * with `.gitignore` and `.dstackignore`, hidden files included, `.git/` never): each ignore file
 * applies below its own directory, deeper ones after (so they can re-include with `!`).
 */
import { lstat, readdir, readFile, readlink, realpath, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, posix, relative, resolve, sep } from 'node:path';
import ignorePackage, { type Ignore } from 'ignore';
import { CommandError } from '../output/command-error.js';
import type { TarEntry } from './tar-archive.js';

const IGNORE_FILES = ['.gitignore', '.dstackignore'] as const;

// A CommonJS package: its factory is `module.exports`, typed (under NodeNext) as its `default`.
const ignore = ignorePackage.default;

interface Rules {
  /** The directory the rules are relative to. */
  base: string;
  matcher: Ignore;
}

async function rulesOf(directory: string): Promise<Rules | null> {
  const texts: string[] = [];
  for (const name of IGNORE_FILES) {
    const text = await readFile(join(directory, name), 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    });
    if (text !== null) texts.push(text);
  }
  return texts.length === 0 ? null : { base: directory, matcher: ignore().add(texts.join('\n')) };
}

function isIgnored(stack: readonly Rules[], path: string, isDirectory: boolean): boolean {
  let ignored = false;
  for (const rules of stack) {
    const relativePath = relative(rules.base, path).split(sep).join('/');
    const result = rules.matcher.test(isDirectory ? `${relativePath}/` : relativePath);
    if (result.ignored) ignored = true;
    if (result.unignored) ignored = false;
  }
  return ignored;
}

/**
 * Tar entries for `root` (a directory or a file) named `prefix/…` (`prefix` empty: relative to
 * the root itself), sorted by name so the archive is reproducible. A symbolic link to somewhere
 * inside the root stays a link (made relative); one to a file outside becomes that file, as dstack does.
 */
export async function walkForArchive(root: string, prefix: string): Promise<TarEntry[]> {
  const entries: TarEntry[] = [];
  const rootStat = await stat(root);
  const realRoot = await realpath(root);
  const name = (path: string) => {
    const relativePath = relative(root, path).split(sep).join('/');
    return [prefix, relativePath].filter((part) => part !== '').join('/');
  };
  if (!rootStat.isDirectory()) {
    entries.push(await entryFor(root, prefix || basename(root), realRoot, true));
    return entries;
  }
  if (prefix !== '') entries.push(await entryFor(root, prefix, realRoot, true));
  const visit = async (directory: string, inherited: readonly Rules[]) => {
    const own = await rulesOf(directory);
    const stack = own ? [...inherited, own] : inherited;
    const children = (await readdir(directory, { withFileTypes: true })).sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    );
    for (const child of children) {
      const path = join(directory, child.name);
      if (child.name === '.git' && child.isDirectory()) continue;
      if (isIgnored(stack, path, child.isDirectory())) continue;
      entries.push(await entryFor(path, name(path), realRoot));
      if (child.isDirectory()) await visit(path, stack);
    }
  };
  await visit(root, []);
  return entries;
}

/**
 * The entry for `path`. The root itself is followed when it is a link (`files: [link]` packs what
 * it names). A link that leads out of the root is refused, naming it, unless it names a file
 * (packed as that file): the runner refuses such links, so the job would fail.
 */
async function entryFor(
  path: string,
  entryName: string,
  realRoot: string,
  isRoot = false,
): Promise<TarEntry> {
  const info = isRoot ? await stat(path) : await lstat(path);
  const mtimeSeconds = Math.floor(info.mtimeMs / 1000);
  if (info.isDirectory()) return { kind: 'directory', name: entryName, mode: info.mode, mtimeSeconds };
  if (info.isSymbolicLink()) {
    const target = await readlink(path);
    const absoluteTarget = resolve(dirname(path), target);
    const resolved = await realpath(path).catch(() => null);
    const inside = (candidate: string) => candidate === realRoot || candidate.startsWith(`${realRoot}${sep}`);
    if (resolved !== null && !inside(resolved) && (await stat(resolved)).isFile()) {
      const targetInfo = await stat(resolved);
      return {
        kind: 'file',
        name: entryName,
        mode: targetInfo.mode,
        mtimeSeconds: Math.floor(targetInfo.mtimeMs / 1000),
        sourcePath: resolved,
      };
    }
    const linkDirectory = await realpath(dirname(path));
    const leadsTo = resolved ?? resolve(linkDirectory, target);
    const climbs = (candidate: string) => {
      const spelled = posix.normalize(posix.join(posix.dirname(entryName), candidate.split(sep).join('/')));
      return spelled === '..' || spelled.startsWith('../');
    };
    let linkTarget = isAbsolute(target) ? relative(dirname(path), absoluteTarget) : target;
    // `../../project/x` from `project/src` leads inside, but the runner judges the spelling.
    if (inside(leadsTo) && climbs(linkTarget)) linkTarget = relative(linkDirectory, leadsTo);
    if (!inside(leadsTo) || climbs(linkTarget)) {
      throw new CommandError(
        `${path} is a symbolic link to ${target}, outside ${realRoot}: the job's runner refuses links that lead out (leave it out with .dstackignore, or link inside)`,
      );
    }
    return { kind: 'symlink', name: entryName, mode: info.mode, mtimeSeconds, target: linkTarget };
  }
  return { kind: 'file', name: entryName, mode: info.mode, mtimeSeconds, sourcePath: path };
}
