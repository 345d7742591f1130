/**
 * The machines a cloud emulator boots: when the emulated cloud launches an instance, a real
 * isolated host comes up (its own address, sshd on port 22) and runs the exact user data the
 * backend sent; when the instance is terminated, the host goes away with everything it ran.
 * The VM emulators depend on this interface only, each instance's host held in an
 * `EmulatedInstanceHost` (instance-host.ts); the Docker implementation makes each host a container.
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

/** A block device given to a host (an attached network volume), as the host's kernel shows it. */
export interface HostBlockDevice {
  /** Its node in the host, as the cloud's instance names it (`/dev/nvme1n1` on a Nitro instance). */
  readonly path: string;
  /** The device numbers of the real device on this machine (a loop device). */
  readonly major: number;
  readonly minor: number;
  /** udev's symlinks to it (`/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_vol0abc…`). */
  readonly links: readonly string[];
}

export interface EmulatedHosts {
  /** Boots the host and starts running its user data; resolves once sshd accepts connections. */
  launch(request: HostLaunchRequest): Promise<EmulatedHost>;
  /** Stops the host abruptly (a spot interruption or a stop): everything on it ends. Idempotent. */
  terminate(instanceId: string): Promise<void>;
  /** Terminates every host this object made (the emulator's shutdown). */
  close(): Promise<void>;
  /** Makes the device appear in the running host (its node and links); absent: hosts get no devices. */
  attachBlockDevice?(instanceId: string, device: HostBlockDevice): Promise<void>;
  /** Removes the device's node and links from the host; nothing when the host is gone. */
  detachBlockDevice?(instanceId: string, device: HostBlockDevice): Promise<void>;
}
