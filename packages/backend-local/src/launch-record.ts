import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { JobProvisioningData } from '@dstack/core';

/**
 * What `<home>/launch.json` records: the launch's provisioning data (its `instance_type` is the
 * share of the host the instance takes), the dstack instance id it was keyed by, and the host's
 * GPUs it holds.
 */
export interface LaunchRecord {
  dstack_instance_id: string;
  provisioning_data: JobProvisioningData;
  /**
   * The NVIDIA indices of the host's GPUs the instance holds; its shim hands out only these.
   * Absent in records written before GPUs were assigned: such an instance had the whole host.
   */
  gpu_ids?: string[];
}

/** The record of a launch in each instance home, written right after the shim is spawned. */
export const LAUNCH_RECORD_FILE = 'launch.json';

/** `<home>/launch.json`, or null when there is none (not launched, or being removed) or it does not parse. */
export async function readLaunchRecord(home: string): Promise<LaunchRecord | null> {
  try {
    return JSON.parse(await readFile(join(home, LAUNCH_RECORD_FILE), 'utf8')) as LaunchRecord;
  } catch {
    return null;
  }
}
