/**
 * What a backend's `createInstance` gets besides the offer (dstack's `InstanceConfiguration`),
 * apart from the offer models (`instances.ts`) that runs and plans are made of: a client reading
 * runs builds no volume models.
 */
import * as z from 'zod';
import { VolumeSchema } from './volumes.js';

export const SSHKeySchema = z.object({
  public: z.string(),
  private: z.string().nullish(),
});
export type SSHKey = z.output<typeof SSHKeySchema>;

/** What `createInstance` needs besides the offer (dstack's `InstanceConfiguration`). */
export const InstanceConfigurationSchema = z.object({
  project_name: z.string(),
  /** The dstack-side name (job name or `{fleet}-{n}`); make it unique with `generateUniqueBackendName`. */
  instance_name: z.string(),
  /** The dstack user who asked for the instance, for tags/labels. */
  user: z.string(),
  /**
   * Keys to authorize on the instance; the first is the project key, with its `private` half (as
   * dstack's), for backends that log in to finish the bootstrap (Lambda has no user data).
   */
  ssh_keys: z.array(SSHKeySchema),
  /**
   * dstack's id of the instance (the server's `instances` row): the idempotency key of the
   * launch. A second `createInstance` with the same `instance_id` must return the instance
   * the first call launched (or fail), never launch another, so a server that died mid-call
   * and retries leaves no orphaned machine. Use it as EC2 `ClientToken`, in the GCP instance
   * name, as a Vast.ai label.
   */
  instance_id: z.string().min(1),
  /**
   * The instance's agent token, chosen by the server per instance: give it to the shim the
   * instance starts, never on its command line (`ps` shows that to every user) — in
   * `DSTACK_SHIM_TOKEN`, or in a file only the shim's user may read, passed as `--token-file`
   * (cloud-init: a `write_files` entry with `permissions: '0600'`). The shim then answers only
   * requests that carry it. Keep it out of logs, tags and labels: whoever holds it can run
   * commands on the instance through the shim.
   */
  agent_token: z.string().min(1),
  /**
   * Where a VM's bootstrap downloads the agent runtime from: a tarball of
   * `@dstack/runner-runtime-linux-x64` (`package/dist/dstack-runtime/shim.mjs`, …) or an archive of
   * that directory as `dstack-runtime/`. The server fills it from its setting
   * (`DSTACK_SHIM_DOWNLOAD_URL`); absent or null: that package's npm tarball at @dstack/core's version.
   */
  agent_download_url: z.string().url().nullish(),
  /** The download's sha256 (hex), which the host checks before unpacking; null: not checked. */
  agent_download_sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/, 'expected 64 lowercase hex digits')
    .nullish(),
  /** The download's size in bytes, checked too, and what lets a partial download resume. */
  agent_download_size: z.number().int().positive().nullish(),
  reservation: z.string().nullish(),
  volumes: z.array(VolumeSchema).nullish(),
  /** User tags; backend tags win on conflict (see `mergeTags`). */
  tags: z.record(z.string(), z.string()).nullish(),
});
export type InstanceConfiguration = z.output<typeof InstanceConfigurationSchema>;
