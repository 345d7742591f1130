/**
 * The Linux capabilities this process may hand on to a container: its bounding set. A container
 * asking for one outside it fails to start ("unable to apply caps"), which is what `--privileged`
 * does in a sandbox that keeps some (CAP_SYS_RESOURCE, say) from its processes.
 */
import { readFile } from 'node:fs/promises';

/** Capability names by number (linux/capability.h), as Docker's `--cap-add`/`--cap-drop` take them. */
const CAPABILITY_NAMES = [
  'CHOWN',
  'DAC_OVERRIDE',
  'DAC_READ_SEARCH',
  'FOWNER',
  'FSETID',
  'KILL',
  'SETGID',
  'SETUID',
  'SETPCAP',
  'LINUX_IMMUTABLE',
  'NET_BIND_SERVICE',
  'NET_BROADCAST',
  'NET_ADMIN',
  'NET_RAW',
  'IPC_LOCK',
  'IPC_OWNER',
  'SYS_MODULE',
  'SYS_RAWIO',
  'SYS_CHROOT',
  'SYS_PTRACE',
  'SYS_PACCT',
  'SYS_ADMIN',
  'SYS_BOOT',
  'SYS_NICE',
  'SYS_RESOURCE',
  'SYS_TIME',
  'SYS_TTY_CONFIG',
  'MKNOD',
  'LEASE',
  'AUDIT_WRITE',
  'AUDIT_CONTROL',
  'SETFCAP',
  'MAC_OVERRIDE',
  'MAC_ADMIN',
  'SYSLOG',
  'WAKE_ALARM',
  'BLOCK_SUSPEND',
  'AUDIT_READ',
  'PERFMON',
  'BPF',
  'CHECKPOINT_RESTORE',
] as const;

export interface Capabilities {
  /** The named capabilities in the bounding set. */
  readonly present: readonly string[];
  /** The named capabilities missing from it: what `--cap-add ALL` must drop again. */
  readonly missing: readonly string[];
}

let cached: Promise<Capabilities> | undefined;

/** This process's bounding set, read once from /proc/self/status. */
export function availableCapabilities(): Promise<Capabilities> {
  cached ??= readFile('/proc/self/status', 'utf8').then((status) => {
    const line = status.split('\n').find((entry) => entry.startsWith('CapBnd:'));
    if (line === undefined) throw new Error('/proc/self/status has no CapBnd line');
    const mask = BigInt(`0x${line.slice('CapBnd:'.length).trim()}`);
    const present: string[] = [];
    const missing: string[] = [];
    CAPABILITY_NAMES.forEach((name, bit) => {
      ((mask >> BigInt(bit)) & 1n ? present : missing).push(name);
    });
    return { present, missing };
  });
  return cached;
}
