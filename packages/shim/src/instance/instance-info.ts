import { execFile } from 'node:child_process';
import type { InstanceInfo } from '@dstack/core/agent-protocol';

/**
 * The host's GPU vendor and driver, as `GET /api/instance/info` reports them. Only NVIDIA
 * (through `nvidia-smi`) is detected; a host without it reports nulls.
 */
export async function readInstanceInfo(): Promise<InstanceInfo> {
  const driverVersion = await nvidiaDriverVersion();
  if (driverVersion === null) {
    return { gpu_vendor: null, gpu_driver_version: null };
  }
  return { gpu_vendor: 'nvidia', gpu_driver_version: driverVersion };
}

function nvidiaDriverVersion(): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(
      'nvidia-smi',
      ['--query-gpu=driver_version', '--format=csv,noheader'],
      { timeout: 10_000 },
      (error, stdout) => {
        const firstLine = stdout.split('\n')[0]?.trim() ?? '';
        resolve(error === null && firstLine !== '' ? firstLine : null);
      },
    );
  });
}

/**
 * The host's NVIDIA GPUs by index, as `nvidia-smi` lists them (the ids Docker's `DeviceIDs` and
 * `CUDA_VISIBLE_DEVICES` take); empty on a host without them.
 */
export function readHostGpuIds(): Promise<string[]> {
  return new Promise((resolve) => {
    execFile(
      'nvidia-smi',
      ['--query-gpu=index', '--format=csv,noheader'],
      { timeout: 10_000 },
      (error, stdout) => {
        if (error !== null) {
          resolve([]);
          return;
        }
        resolve(
          stdout
            .split('\n')
            .map((line) => line.trim())
            .filter((line) => line !== ''),
        );
      },
    );
  });
}
