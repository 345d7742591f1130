/**
 * The machines a cloud emulator boots: when the emulated cloud launches an instance, a real
 * isolated host comes up (its own address, sshd on port 22) and runs the exact user data the
 * backend sent; when the instance is terminated, the host goes away with everything it ran.
 * The emulators (EC2, Compute Engine) depend on this interface only; the Docker implementation
 * makes each host a container.
 */

import type { EmulatedHostKind } from './hosts/emulated-host-image.js';

/** What an emulated cloud asks for when an instance is launched. */
export interface HostLaunchRequest {
  /** The cloud's instance id (`i-…`, an instance name), one host per id. */
  readonly instanceId: string;
  /** The user data as the backend sent it, decoded (a shell script or `#cloud-config`); empty when none. */
  readonly userData: string;
  /**
   * What the instance's image has: `docker` (dstack's VM images, AWS's Deep Learning AMI: a
   * Docker daemon starts at boot) or `plain` (Canonical's Ubuntu: no Docker). Default `docker`.
   */
  readonly kind?: EmulatedHostKind;
}

/** A host that is up. */
export interface EmulatedHost {
  readonly instanceId: string;
  /** The address the server reaches the host's sshd (port 22) at; the instance's public and private IP. */
  readonly address: string;
}

/** A network disk that appears in a host as a block device (see `hosts/loop-block-devices.ts`). */
export interface HostBlockDevice {
  /** The disk's bytes on this machine: a file that outlives attachments. */
  readonly backingFile: string;
  /** The device node in the host, e.g. `/dev/sdb`. */
  readonly devicePath: string;
  /** Absolute paths of the symlinks to it the guest's udev makes, e.g. `/dev/disk/by-id/google-pd-x`. */
  readonly links: readonly string[];
}

export interface EmulatedHosts {
  /** Boots the host and starts running its user data; resolves once sshd accepts connections. */
  launch(request: HostLaunchRequest): Promise<EmulatedHost>;
  /** Stops the host abruptly (a spot interruption or a stop): everything on it ends. Idempotent. */
  terminate(instanceId: string): Promise<void>;
  /**
   * Makes `device` appear in the instance's host (a loop device of this machine for its backing
   * file, a node and links in the host). Absent when the hosts cannot have block devices; the
   * emulator then keeps attachments as records only.
   */
  attachBlockDevice?(instanceId: string, device: HostBlockDevice): Promise<void>;
  /** Removes the device from the host and frees its loop device; idempotent. */
  detachBlockDevice?(instanceId: string, devicePath: string): Promise<void>;
  /** Terminates every host this object made (the emulator's shutdown). */
  close(): Promise<void>;
}
