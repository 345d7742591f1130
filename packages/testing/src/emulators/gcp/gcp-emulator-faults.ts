/**
 * Faults the GCP emulator injects on demand, from tests (`emulator.addFault`), over HTTP
 * (`POST /_emulator/faults`) and from the command line (`--fault CODE[:MACHINE_TYPE]`).
 * Capacity and quota faults are sticky per (machine type, zone, provisioning model) as a real
 * shortage is, and arrive the way Compute Engine reports them: in the insert operation's `error`,
 * possibly late (`delayMs` after the insert, the operation RUNNING until then).
 */
import { z } from 'zod';
import {
  type ActiveFault,
  EmulatorFaultList,
  parseFaultFlag,
  parseFaultWith,
} from '../emulator-fault-list.js';

export const GCP_FAULT_CODES = [
  /** The insert operation ends DONE with ZONE_RESOURCE_POOL_EXHAUSTED (503), `delayMs` after the insert; the instance then 404s. */
  'ZONE_RESOURCE_POOL_EXHAUSTED',
  /** The insert operation ends DONE with QUOTA_EXCEEDED (403) naming the GPU (or CPUS) quota of the region. */
  'QUOTA_EXCEEDED',
  /** Compute and Billing answer 429 rateLimitExceeded (`count` requests, or every `everyNth`; every request when neither is given). */
  'RATE_LIMIT_EXCEEDED',
  /** The service account's key is revoked: the token endpoint answers invalid_grant and every bearer token 401. */
  'INVALID_GRANT',
  /** The natIP of a new instance appears `delayMs` after it is RUNNING. */
  'SLOW_NAT_IP',
  /** A RUNNING spot instance is preempted `afterRunningMs` after it started running. */
  'PREEMPTION',
] as const;

export type GcpFaultCode = (typeof GCP_FAULT_CODES)[number];
export type GcpProvisioningModel = 'STANDARD' | 'SPOT';

const gcpFaultSchema = z
  .object({
    code: z.enum(GCP_FAULT_CODES),
    /** Only inserts of this machine type (e.g. `g2-standard-4`); every type when absent. */
    machineType: z.string().min(1).optional(),
    /** Only inserts in this zone (e.g. `us-central1-a`). */
    zone: z.string().min(1).optional(),
    /** Only inserts into this resource policy (a compact placement, by name); `*`: into any policy. */
    resourcePolicy: z.string().min(1).optional(),
    /** Only this provisioning model. */
    provisioningModel: z.enum(['STANDARD', 'SPOT']).optional(),
    /** How many times the fault fires before it is removed; it stays until cleared when absent. */
    count: z.number().int().positive().optional(),
    /** RATE_LIMIT_EXCEEDED: throttle one request of every `everyNth` (2 = every other one). */
    everyNth: z.number().int().min(2).optional(),
    /**
     * ZONE_RESOURCE_POOL_EXHAUSTED / QUOTA_EXCEEDED: how long after the insert the operation
     * fails (default: when it would have succeeded); SLOW_NAT_IP: how late the IP appears (default 5000).
     */
    delayMs: z.number().int().nonnegative().optional(),
    /** PREEMPTION: how long a spot instance runs before it is preempted. Default 5000. */
    afterRunningMs: z.number().int().nonnegative().optional(),
  })
  .strict();

export type GcpFault = z.infer<typeof gcpFaultSchema>;

/** An active fault with its id (to remove it) and how often it fired. */
export type ActiveGcpFault = ActiveFault<GcpFault>;

/** Validates a fault given over HTTP or by a test; the error names the bad field. */
export function parseGcpFault(input: unknown): GcpFault {
  return parseFaultWith(gcpFaultSchema, 'GCP', input);
}

/**
 * `CODE[:MACHINE_TYPE]` from the command line, e.g. `ZONE_RESOURCE_POOL_EXHAUSTED:g2-standard-4`.
 * RATE_LIMIT_EXCEEDED from the command line throttles every other request, so a client that
 * retries still gets through.
 */
export function parseGcpFaultFlag(flag: string): GcpFault {
  return parseFaultFlag(flag, {
    codes: GCP_FAULT_CODES,
    typeField: 'machineType',
    typeName: 'MACHINE_TYPE',
    throttleCode: 'RATE_LIMIT_EXCEEDED',
    parse: parseGcpFault,
  });
}

/** What an insert looks like to the faults that may hit it. */
export interface InsertTarget {
  readonly machineType: string;
  readonly zone: string;
  readonly provisioningModel: GcpProvisioningModel;
  /** The resource policy the instance goes into, if any. */
  readonly resourcePolicy?: string;
}

export class GcpEmulatorFaults extends EmulatorFaultList<GcpFault, ActiveGcpFault> {
  constructor() {
    super((fault, id) => ({ ...parseGcpFault(fault), id, fired: 0, seen: 0 }));
  }

  /** Whether a fault with `code` applies to `target` (not consumed). */
  has(code: GcpFaultCode, target: Partial<InsertTarget> = {}): ActiveGcpFault | undefined {
    return this.faults.find((fault) => fault.code === code && matchesTarget(fault, target));
  }

  /** The first fault with `code` that applies, counted as fired (and removed once its count is used). */
  fire(code: GcpFaultCode, target: Partial<InsertTarget> = {}): ActiveGcpFault | undefined {
    for (const fault of [...this.faults]) {
      if (fault.code !== code || !matchesTarget(fault, target)) continue;
      if (this.countRequest(fault)) return fault;
    }
    return undefined;
  }
}

function matchesTarget(fault: GcpFault, target: Partial<InsertTarget>): boolean {
  if (fault.machineType !== undefined && fault.machineType !== target.machineType) return false;
  if (fault.zone !== undefined && fault.zone !== target.zone) return false;
  if (fault.provisioningModel !== undefined && fault.provisioningModel !== target.provisioningModel)
    return false;
  if (fault.resourcePolicy !== undefined) {
    if (target.resourcePolicy === undefined) return false;
    if (fault.resourcePolicy !== '*' && fault.resourcePolicy !== target.resourcePolicy) return false;
  }
  return true;
}
