/**
 * Faults the Azure emulator injects on demand, from tests (`emulator.addFault`), over HTTP
 * (`POST /_emulator/faults`) and from the command line (`--fault CODE[:VM_SIZE]`), each arriving
 * the way Azure reports it: `AllocationFailed` in the create's long-running operation (the VM
 * resource left `Failed`), `SkuNotAvailable` and quota (`OperationNotAllowed`) as the PUT's 409,
 * throttling as 429 with `Retry-After`, a revoked client secret at the token endpoint.
 */
import { z } from 'zod';
import {
  type ActiveFault,
  EmulatorFaultList,
  parseFaultFlag,
  parseFaultWith,
} from '../emulator-fault-list.js';

export const AZURE_FAULT_CODES = [
  /** The VM create's operation ends Failed with AllocationFailed; the VM resource stays, provisioningState Failed. */
  'AllocationFailed',
  /** The VM PUT answers 409 SkuNotAvailable (the size is not offered to the subscription there now). */
  'SkuNotAvailable',
  /** The VM PUT answers 409 OperationNotAllowed: the regional vCPU quota of the size's family is exceeded. */
  'QuotaExceeded',
  /** Resource Manager answers 429 TooManyRequests with Retry-After (`count` requests, or every `everyNth`). */
  'TooManyRequests',
  /** The service principal's secret is revoked: the token endpoint answers AADSTS7000215 and tokens stop working. */
  'InvalidClientSecret',
] as const;

export type AzureFaultCode = (typeof AZURE_FAULT_CODES)[number];

const azureFaultSchema = z
  .object({
    code: z.enum(AZURE_FAULT_CODES),
    /** Only VMs of this size (e.g. `Standard_NC4as_T4_v3`); every size when absent. */
    vmSize: z.string().min(1).optional(),
    /** Only VMs in this region (e.g. `eastus`). */
    location: z.string().min(1).optional(),
    /** Only this priority (`Spot` or `Regular`). */
    priority: z.enum(['Spot', 'Regular']).optional(),
    /** How many times the fault fires before it is removed; it stays until cleared when absent. */
    count: z.number().int().positive().optional(),
    /** TooManyRequests: throttle one request of every `everyNth` (2 = every other one). */
    everyNth: z.number().int().min(2).optional(),
  })
  .strict();

export type AzureFault = z.infer<typeof azureFaultSchema>;
export type ActiveAzureFault = ActiveFault<AzureFault>;

/** Validates a fault given over HTTP or by a test; the error names the bad field. */
export function parseAzureFault(input: unknown): AzureFault {
  return parseFaultWith(azureFaultSchema, 'Azure', input);
}

/** `CODE[:VM_SIZE]` from the command line; TooManyRequests throttles every other request. */
export function parseAzureFaultFlag(flag: string): AzureFault {
  return parseFaultFlag(flag, {
    codes: AZURE_FAULT_CODES,
    typeField: 'vmSize',
    typeName: 'VM_SIZE',
    throttleCode: 'TooManyRequests',
    parse: parseAzureFault,
  });
}

/** What a VM create is, for matching faults. */
export interface AzureVmTarget {
  readonly vmSize: string;
  readonly location: string;
  readonly priority: 'Spot' | 'Regular';
}

export class AzureEmulatorFaults extends EmulatorFaultList<AzureFault, ActiveAzureFault> {
  constructor() {
    super((fault, id) => ({ ...parseAzureFault(fault), id, fired: 0, seen: 0 }));
  }

  /** Whether a fault of `code` is active (without counting a request). */
  has(code: AzureFaultCode): boolean {
    return this.faults.some((fault) => fault.code === code);
  }

  /** Counts a request against the first fault of `code` matching `target`; true when it fires. */
  fire(code: AzureFaultCode, target?: AzureVmTarget): boolean {
    const fault = this.faults.find(
      (each) =>
        each.code === code &&
        (target === undefined ||
          ((each.vmSize === undefined || each.vmSize.toLowerCase() === target.vmSize.toLowerCase()) &&
            (each.location === undefined || each.location === target.location) &&
            (each.priority === undefined || each.priority === target.priority))),
    );
    return fault !== undefined && this.countRequest(fault);
  }
}
