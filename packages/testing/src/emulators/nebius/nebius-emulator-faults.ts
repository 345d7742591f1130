/**
 * Faults the Nebius emulator injects on demand (`emulator.addFault`, `--fault CODE[:PLATFORM]`),
 * each as Nebius answers it: a gRPC status on the call, or a failed Operation.
 */
import { z } from 'zod';
import {
  type ActiveFault,
  EmulatorFaultList,
  parseFaultFlag,
  parseFaultWith,
} from '../emulator-fault-list.js';

export const NEBIUS_FAULT_CODES = [
  /** An instance create's Operation fails: RESOURCE_EXHAUSTED, not enough resources (the call itself succeeds). */
  'NO_CAPACITY',
  /** An instance create is refused at once: RESOURCE_EXHAUSTED, "Quota limit exceeded". */
  'QUOTA_EXCEEDED',
  /** The token exchange refuses the service account, and issued tokens stop working: UNAUTHENTICATED. */
  'INVALID_CREDENTIALS',
  /** A call is UNAVAILABLE. */
  'UNAVAILABLE',
] as const;
export type NebiusFaultCode = (typeof NEBIUS_FAULT_CODES)[number];

const nebiusFaultSchema = z
  .object({
    code: z.enum(NEBIUS_FAULT_CODES),
    platform: z.string().min(1).optional(),
    region: z.string().min(1).optional(),
    count: z.number().int().positive().optional(),
    everyNth: z.number().int().min(2).optional(),
  })
  .strict();

export type NebiusFault = z.infer<typeof nebiusFaultSchema>;
export type ActiveNebiusFault = ActiveFault<NebiusFault>;

export function parseNebiusFault(input: unknown): NebiusFault {
  return parseFaultWith(nebiusFaultSchema, 'Nebius', input);
}

export function parseNebiusFaultFlag(flag: string): NebiusFault {
  return parseFaultFlag(flag, {
    codes: NEBIUS_FAULT_CODES,
    typeField: 'platform',
    typeName: 'PLATFORM',
    throttleCode: 'UNAVAILABLE',
    parse: parseNebiusFault,
  });
}

export class NebiusEmulatorFaults extends EmulatorFaultList<NebiusFault, ActiveNebiusFault> {
  constructor() {
    super((fault, id) => ({ ...parseNebiusFault(fault), id, fired: 0, seen: 0 }));
  }

  fire(code: NebiusFaultCode, launch?: { platform: string; region: string }): ActiveNebiusFault | undefined {
    for (const fault of [...this.faults]) {
      if (fault.code !== code) continue;
      if (fault.platform !== undefined && fault.platform !== launch?.platform) continue;
      if (fault.region !== undefined && fault.region !== launch?.region) continue;
      if (this.countRequest(fault)) return fault;
    }
    return undefined;
  }
}
