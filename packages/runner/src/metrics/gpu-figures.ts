/**
 * GPU utilization and memory through the vendor's tool, as dstack's runner: `nvidia-smi`, else
 * `amd-smi`. A host with neither tool has no GPUs to report (an empty list); a tool that is there
 * but fails gives an error instead, so that no figure is reported as a false zero.
 */
import { execFile } from 'node:child_process';
import type { RunnerGpuMetrics } from '@dstack/core/agent-protocol';

const TOOL_TIMEOUT_MS = 10_000;
const BYTES_PER_MIB = 1024 * 1024;

export type GpuFigures = { gpus: RunnerGpuMetrics[]; error: null } | { gpus: []; error: string };

type ToolResult =
  | { kind: 'absent' }
  | { kind: 'failed'; message: string }
  | { kind: 'output'; stdout: string };

function runTool(command: string, args: readonly string[]): Promise<ToolResult> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: TOOL_TIMEOUT_MS, encoding: 'utf8' }, (error, stdout, stderr) => {
      if ((error as NodeJS.ErrnoException | null)?.code === 'ENOENT') resolve({ kind: 'absent' });
      else if (error) resolve({ kind: 'failed', message: `${command}: ${(stderr || error.message).trim()}` });
      else resolve({ kind: 'output', stdout });
    });
  });
}

/** `nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader,nounits`: `MiB, percent` per line. */
export function parseNvidiaSmi(output: string): RunnerGpuMetrics[] {
  return output
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .map((line) => {
      const [memory, utilization] = line.split(',').map((part) => part.trim().replace(/%$/, ''));
      if (!/^\d+$/.test(memory ?? '') || !/^\d+$/.test(utilization ?? '')) {
        throw new Error(`nvidia-smi: unreadable line "${line}"`);
      }
      return {
        gpu_memory_usage_bytes: Number(memory) * BYTES_PER_MIB,
        gpu_util_percent: Number(utilization),
      };
    });
}

/** `amd-smi monitor -vu --csv`: a header naming `gfx` (utilization) and `vram_used` (MiB). */
export function parseAmdSmi(output: string): RunnerGpuMetrics[] {
  const lines = output
    .trim()
    .split('\n')
    .map((line) => line.trim());
  const header = lines[0]?.split(',') ?? [];
  const utilizationColumn = header.indexOf('gfx');
  const memoryColumn = header.indexOf('vram_used');
  if (utilizationColumn < 0 || memoryColumn < 0) throw new Error('amd-smi: no gfx or vram_used column');
  return lines.slice(1).map((line) => {
    const fields = line.split(',').map((field) => field.trim());
    const utilization = fields[utilizationColumn] ?? '';
    const memory = fields[memoryColumn] ?? '';
    if (!/^\d+$/.test(utilization) || !/^\d+$/.test(memory))
      throw new Error(`amd-smi: unreadable line "${line}"`);
    return { gpu_memory_usage_bytes: Number(memory) * BYTES_PER_MIB, gpu_util_percent: Number(utilization) };
  });
}

/** The tools, with the arguments that limit them to `devices` (indices or UUIDs; null: all). */
function tools(devices: readonly string[] | null) {
  return [
    {
      command: 'nvidia-smi',
      args: [
        ...(devices === null ? [] : [`--id=${devices.join(',')}`]),
        '--query-gpu=memory.used,utilization.gpu',
        '--format=csv,noheader,nounits',
      ],
      parse: parseNvidiaSmi,
    },
    {
      command: 'amd-smi',
      args: ['monitor', ...(devices === null ? [] : ['--gpu', ...devices]), '-vu', '--csv'],
      parse: parseAmdSmi,
    },
  ] as const;
}

/**
 * The job's GPUs that `nvidia-smi` or `amd-smi` report; `devices` are the ones the job holds
 * (null: every GPU the tool sees, as in a container, which sees only its own). A job that holds
 * none has none, whatever the host has.
 */
export async function readGpuFigures(devices: readonly string[] | null = null): Promise<GpuFigures> {
  if (devices !== null && devices.length === 0) return { gpus: [], error: null };
  for (const tool of tools(devices)) {
    const result = await runTool(tool.command, tool.args);
    if (result.kind === 'absent') continue;
    if (result.kind === 'failed') return { gpus: [], error: result.message };
    try {
      return { gpus: tool.parse(result.stdout), error: null };
    } catch (error) {
      return { gpus: [], error: (error as Error).message };
    }
  }
  return { gpus: [], error: null };
}
