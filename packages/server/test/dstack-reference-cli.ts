/**
 * dstack's own CLI (0.21.2), run from its source as a reference client. The sources come from
 * the team's fetched mirrors of dstackai/dstack and dstackai/gpuhunt (never committed here); the
 * Python packages they import come from this machine's local package index, into a venv built
 * once per machine under DSTACK_TEST_CACHE (default /var/cache/dstack-test).
 *
 * Sandbox workaround, test set-up only: five packages dstack's CLI imports are not on this
 * machine's index (PyPI is unreachable). None of them is on the path `dstack apply` (attached),
 * `dstack ps` or the Python API takes against this server, so each is replaced by a stand-in that
 * keeps the import working and fails loudly if used (see STAND_INS).
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

// The build's steps run asynchronously: a vitest worker blocked for a minute (pip under load)
// misses vitest's RPC deadline and fails the whole run ("Timeout calling onTaskUpdate").
const execFileAsync = promisify(execFile);

export const REFERENCE_DSTACK_VERSION = '0.21.2';
/** The gpuhunt release dstack 0.21.2 pins (`gpuhunt==0.1.30` in its pyproject.toml). */
const REFERENCE_GPUHUNT_VERSION = '0.1.30';

/** dstack 0.21.2's dependencies that this machine's index has (the rest come from the system site packages). */
const INDEXED_PACKAGES = [
  'rich',
  'paramiko',
  'gitpython',
  'tqdm',
  'websocket-client',
  'python-multipart',
  'filelock',
  'psutil',
  'argcomplete',
  'apscheduler<4',
  'cachetools',
];

const STAND_INS: Record<string, string> = {
  // The CLI's help formatter (cli/main.py, cli/commands/__init__.py): plain argparse help instead.
  'rich_argparse/__init__.py': [
    'import argparse',
    'class RichHelpFormatter(argparse.RawDescriptionHelpFormatter):',
    '    usage_markup = False',
    '    styles = {}',
  ].join('\n'),
  // Hides the terminal cursor during progress output.
  'cursor/__init__.py': 'def hide(*args, **kwargs): pass\ndef show(*args, **kwargs): pass',
  // Interactive menus of `dstack login` and `dstack project` (not run here).
  'questionary/__init__.py': [
    'class Choice:',
    '    def __init__(self, *args, **kwargs): raise NotImplementedError("questionary stand-in")',
    'def select(*args, **kwargs): raise NotImplementedError("questionary stand-in")',
  ].join('\n'),
  // A Rust extension walking a repo's files for upload; these runs upload no repo.
  'ignore/__init__.py': [
    'class WalkBuilder:',
    '    def __init__(self, *args, **kwargs): raise NotImplementedError("ignore stand-in")',
  ].join('\n'),
  'ignore/overrides.py': [
    'class OverrideBuilder:',
    '    def __init__(self, *args, **kwargs): raise NotImplementedError("ignore stand-in")',
  ].join('\n'),
  // Mounted for `http+unix://` server URLs only (Debian has 0.3.0; dstack needs >= 0.4.1).
  'requests_unixsocket/__init__.py': 'from requests.adapters import HTTPAdapter as UnixAdapter',
};

/** Where the fetched mirrors are: git directories without work trees (`fetch github:owner/name`). */
function mirrorGitDir(repo: string): string {
  const root = process.env.DSTACK_REFERENCE_MIRRORS ?? '/work/.mirror';
  return join(root, repo.replace('/', '+'), 'repo');
}

/** Why the reference CLI cannot be built here, or null when its sources are present. */
export function referenceCliUnavailable(): string | null {
  for (const [repo, tag] of [
    ['dstackai/dstack', REFERENCE_DSTACK_VERSION],
    ['dstackai/gpuhunt', REFERENCE_GPUHUNT_VERSION],
  ] as const) {
    const gitDir = mirrorGitDir(repo);
    try {
      execFileSync('git', ['--git-dir', gitDir, 'rev-parse', '--verify', `refs/tags/${tag}`], {
        stdio: 'ignore',
      });
    } catch {
      return `${repo} at tag ${tag} is not fetched to ${gitDir} (set DSTACK_REFERENCE_MIRRORS)`;
    }
  }
  return null;
}

async function extractSources(gitDir: string, tag: string, path: string, into: string): Promise<void> {
  // `git archive` writes `src/<package>/…`: strip `src/` so `into` is an import root.
  await execFileAsync('sh', [
    '-c',
    'git --git-dir "$1" archive "$2" "$3" | tar -x -C "$4" --strip-components=1',
    'sh',
    gitDir,
    tag,
    path,
    into,
  ]);
}

async function installVenv(venv: string): Promise<void> {
  await execFileAsync('python3', ['-m', 'venv', '--system-site-packages', venv]);
  await execFileAsync(
    join(venv, 'bin', 'pip'),
    [
      'install',
      '-q',
      '--index-url',
      'file:///opt/pypi/simple',
      '--extra-index-url',
      'file:///opt/pypi-more/simple',
      ...INDEXED_PACKAGES,
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
}

/**
 * The reference CLI's directory, built on first use: `src/` (dstack and gpuhunt), `stand-ins/`,
 * `venv/`. Built in a temporary directory and renamed into place, so a failed build leaves nothing
 * half-made (the venv is made where it stays: its scripts name their own path).
 */
export async function prepareReferenceCli(): Promise<string> {
  const cacheRoot = process.env.DSTACK_TEST_CACHE ?? '/var/cache/dstack-test';
  const home = join(cacheRoot, `reference-dstack-cli-${REFERENCE_DSTACK_VERSION}`);
  if (existsSync(join(home, 'ready'))) return home;
  rmSync(home, { recursive: true, force: true });
  mkdirSync(cacheRoot, { recursive: true });
  const building = mkdtempSync(`${home}.building-`);
  try {
    const src = join(building, 'src');
    mkdirSync(src);
    await extractSources(mirrorGitDir('dstackai/dstack'), REFERENCE_DSTACK_VERSION, 'src/dstack', src);
    await extractSources(mirrorGitDir('dstackai/gpuhunt'), REFERENCE_GPUHUNT_VERSION, 'src/gpuhunt', src);
    // dstack's release build writes its version here (build-artifacts.yml); the source says 0.0.0.
    writeFileSync(
      join(src, 'dstack', 'version.py'),
      [
        `__version__ = "${REFERENCE_DSTACK_VERSION}"`,
        '__is_release__ = True',
        'docker_base_image = "0.15"',
        'docker_base_image_ubuntu_version = "24.04"',
        'vm_base_image = "0.14"',
        '',
      ].join('\n'),
    );
    for (const [file, text] of Object.entries(STAND_INS)) {
      const path = join(building, 'stand-ins', file);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(
        path,
        `# Stand-in: not on this machine's package index (dstack-reference-cli.ts).\n${text}\n`,
      );
    }
    renameSync(building, home);
    await installVenv(join(home, 'venv'));
  } catch (error) {
    rmSync(building, { recursive: true, force: true });
    throw error;
  }
  writeFileSync(join(home, 'ready'), '');
  return home;
}

/** Runs dstack's CLI with `args`; resolves with its exit code and output (stdout and stderr). */
export function runReferenceCli(
  home: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<{ code: number | null; output: string }> {
  const program = 'import sys\nfrom dstack._internal.cli.main import main\nsys.argv[0] = "dstack"\nmain()';
  return runPython(home, ['-c', program, ...args], options);
}

/** Runs `code` with dstack's Python API importable. */
export function runReferencePython(
  home: string,
  code: string,
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<{ code: number | null; output: string }> {
  return runPython(home, ['-c', code], options);
}

function runPython(
  home: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(home, 'venv', 'bin', 'python'), args, {
      cwd: options.cwd,
      env: { ...options.env, PYTHONPATH: `${join(home, 'src')}:${join(home, 'stand-ins')}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(`dstack ${args.slice(2).join(' ')} did not end in ${options.timeoutMs} ms:\n${output}`),
      );
    }, options.timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}
