/**
 * The Slurm commands the backend runs on a login node, and how their output reads. Only what
 * Slurm 22.05 has (`squeue --only-job-state`, which dstack uses, came later): a job's state is
 * `squeue`'s while Slurm schedules it, then `scontrol show job` (kept `MinJobAge` seconds after its
 * end), then `sacct` (clusters with accounting).
 */
import { shellQuote } from '@dstack/core';
import type { SlurmLoginSession } from './slurm-login.js';

/** A node as `scontrol show -o node` describes it. */
export interface SlurmNode {
  name: string;
  /** `Arch` (`x86_64`, `aarch64`), when Slurm knows it. */
  arch: string | null;
  /** Effective CPUs (`CPUEfctv`, else `CPUTot`). */
  cpus: number;
  /** `RealMemory`, MiB. */
  memoryMib: number;
  /** Its GRES entries (`gpu:a100:4`). */
  gres: string[];
  partitions: string[];
  /** `State` (`IDLE`, `MIXED`, `ALLOCATED`, `DOWN+DRAIN`, …). */
  state: string;
  /** `NodeAddr`, else `NodeHostName`. */
  address: string | null;
}

/** A job's state (`PENDING`, `RUNNING`, `COMPLETED`, `CANCELLED`, …) and where it runs. */
export interface SlurmJobState {
  state: string;
  /** The node list while it runs (`squeue`'s `%N`), or null. */
  nodes: string | null;
}

/** States in which a job will never run (again): it ended, or Slurm gave up on it. */
const FINAL_STATES = new Set([
  'BOOT_FAIL',
  'CANCELLED',
  'COMPLETED',
  'DEADLINE',
  'FAILED',
  'NODE_FAIL',
  'OUT_OF_MEMORY',
  'PREEMPTED',
  'REVOKED',
  'SPECIAL_EXIT',
  'TIMEOUT',
]);

export function isFinalJobState(state: string): boolean {
  // sacct prints `CANCELLED by 1000`.
  return FINAL_STATES.has(state.split(/\s/)[0] ?? state);
}

/** A key starts a line or follows whitespace: `Key=` (dstack's `_parse_scontrol_show_line`). */
const KEY = /(?:^|\s)([A-Za-z_]\w*)=/g;

/** `Key=value Key2=value with spaces …` as a map of lower-cased keys. */
export function parseScontrolLine(line: string): Map<string, string> {
  const text = line.trim();
  const matches = [...text.matchAll(KEY)];
  const fields = new Map<string, string>();
  matches.forEach((match, index) => {
    const start = (match.index ?? 0) + match[0].length;
    const end = index + 1 < matches.length ? (matches[index + 1]?.index ?? text.length) : text.length;
    fields.set((match[1] ?? '').toLowerCase(), text.slice(start, end).trim());
  });
  return fields;
}

function splitList(value: string | undefined): string[] {
  if (value === undefined || value === '(null)') return [];
  return value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

function integerField(fields: Map<string, string>, keys: readonly string[], what: string): number {
  for (const key of keys) {
    const value = fields.get(key);
    if (value !== undefined && value !== '') {
      const number = Number(value);
      if (!Number.isInteger(number)) throw new Error(`node ${fields.get('nodename')}: ${what} "${value}"`);
      return number;
    }
  }
  throw new Error(`node ${fields.get('nodename')}: no ${what}`);
}

/** One line of `scontrol show -o node`. */
export function parseNode(line: string): SlurmNode {
  const fields = parseScontrolLine(line);
  const name = fields.get('nodename');
  if (!name) throw new Error(`a node without NodeName: ${line}`);
  const arch = fields.get('arch');
  return {
    name,
    arch: arch && arch !== '(null)' ? arch : null,
    cpus: integerField(fields, ['cpuefctv', 'cputot'], 'CPU count'),
    memoryMib: integerField(fields, ['realmemory'], 'RealMemory'),
    gres: splitList(fields.get('gres')),
    partitions: splitList(fields.get('partitions')),
    state: fields.get('state') ?? 'UNKNOWN',
    address: fields.get('nodeaddr') || fields.get('nodehostname') || null,
  };
}

/** The GPUs of one GRES entry: `gpu:8`, `gpu:a100:4`, `gpu:a100:4(S:0-1)`; 0 for other GRES. */
export function gresGpuCount(gres: string): number {
  if (!gres.startsWith('gpu:')) return 0;
  const spec = gres.split('(')[0] ?? gres;
  const count = Number(spec.slice(spec.lastIndexOf(':') + 1));
  if (!Number.isInteger(count)) throw new Error(`GRES "${gres}": no GPU count`);
  return count;
}

/** Every node of the cluster. */
export async function listNodes(session: SlurmLoginSession): Promise<SlurmNode[]> {
  const output = await session.run('scontrol show node', 'scontrol show -o node');
  return output
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map(parseNode);
}

/** Every partition's name (`sinfo`'s default partition loses its `*`). */
export async function listPartitions(session: SlurmLoginSession): Promise<string[]> {
  const output = await session.run('sinfo', "sinfo -h -o '%P'");
  return [...new Set(output.split('\n').map((line) => line.trim().replace(/\*$/, '')))].filter(
    (name) => name !== '',
  );
}

/** Whether `srun` has pyxis' container options (`--container-image`). */
export async function hasPyxis(session: SlurmLoginSession): Promise<boolean> {
  const output = await session.run('srun --help', 'srun --help 2>&1 | grep -c -- --container-image || true');
  return Number(output.trim()) > 0;
}

/** Submits a batch script (`sbatch --parsable`, the script on its standard input); its job id. */
export async function submitBatchScript(session: SlurmLoginSession, script: string): Promise<string> {
  const output = (await session.run('sbatch', 'sbatch --parsable', script)).trim();
  // `--parsable`: the job id, then `;cluster` on a federation.
  const jobId = output.split(';')[0]?.trim() ?? '';
  if (!/^\d+$/.test(jobId)) throw new Error(`sbatch printed no job id: "${output}"`);
  return jobId;
}

/** The job's state, or null when Slurm no longer knows it. */
export async function jobState(session: SlurmLoginSession, jobId: string): Promise<SlurmJobState | null> {
  const id = shellQuote(jobId);
  const queued = await session.exec(`squeue -h -j ${id} -o '%T|%N' 2>/dev/null`);
  const [state, nodes] = queued.stdout.trim().split('|');
  if (queued.exitStatus === 0 && state) return { state, nodes: nodes || null };
  const shown = await session.exec(`scontrol show -o job ${id} 2>/dev/null`);
  const fields = parseScontrolLine(shown.stdout);
  const shownState = fields.get('jobstate');
  if (shown.exitStatus === 0 && shownState) {
    const nodeList = fields.get('nodelist');
    return { state: shownState, nodes: nodeList && nodeList !== '(null)' ? nodeList : null };
  }
  const accounted = await session.exec(`sacct -n -X -P -j ${id} -o State 2>/dev/null`);
  const accountedState = accounted.stdout.trim().split('\n')[0]?.trim();
  if (accounted.exitStatus === 0 && accountedState) return { state: accountedState, nodes: null };
  return null;
}

/** The address of a node (its `NodeAddr`, resolved on the login node when it is a name). */
export async function nodeAddress(session: SlurmLoginSession, nodeName: string): Promise<string> {
  const output = await session.run('scontrol show node', `scontrol show -o node ${shellQuote(nodeName)}`);
  const node = parseNode(output.split('\n')[0] ?? '');
  const address = node.address ?? node.name;
  if (/^[\d.]+$/.test(address) || address.includes(':')) return address;
  const resolved = await session.run(
    `resolving ${address}`,
    `getent hosts ${shellQuote(address)} | head -n 1`,
  );
  const ip = resolved.trim().split(/\s+/)[0];
  if (!ip) throw new Error(`the login node cannot resolve the node address ${address}`);
  return ip;
}

/** The id of a job of this user named `name` that Slurm still schedules, or null. */
export async function queuedJobNamed(session: SlurmLoginSession, name: string): Promise<string | null> {
  const output = await session.run('squeue', `squeue -h -u "$(id -un)" -n ${shellQuote(name)} -o '%i'`);
  return output.trim().split('\n')[0]?.trim() || null;
}

/** Cancels the job; a job that already ended (or that Slurm forgot) is no error. */
export async function cancelJob(session: SlurmLoginSession, jobId: string): Promise<void> {
  const result = await session.exec(`scancel ${shellQuote(jobId)}`);
  if (result.exitStatus === 0) return;
  if (/already completing or completed|Invalid job id/i.test(result.stderr)) return;
  throw new Error(`scancel ${jobId} failed: ${result.stderr.trim() || result.stdout.trim()}`);
}
