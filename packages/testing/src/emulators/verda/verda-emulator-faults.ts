/**
 * Faults the Verda emulator injects on demand (`emulator.addFault`, `POST /_emulator/faults`,
 * `--fault CODE[:INSTANCE_TYPE]`), each as Verda answers it: `{"code", "message"}`.
 */
import { z } from 'zod';
import {
  type ActiveFault,
  EmulatorFaultList,
  parseFaultFlag,
  parseFaultWith,
} from '../emulator-fault-list.js';

export const VERDA_FAULT_CODES = [
  /** A deploy (of `instanceType` in `location`, or any) is refused: 400 `invalid_request`, no capacity. */
  'NO_CAPACITY',
  /** A deploy is refused: 402 `insufficient_funds`. */
  'INSUFFICIENT_FUNDS',
  /** The token endpoint refuses the client credentials, and issued tokens stop working: 401 `unauthorized_request`. */
  'INVALID_CREDENTIALS',
  /** A call is 429. */
  'RATE_LIMITED',
] as const;
export type VerdaFaultCode = (typeof VERDA_FAULT_CODES)[number];

const verdaFaultSchema = z
  .object({
    code: z.enum(VERDA_FAULT_CODES),
    instanceType: z.string().min(1).optional(),
    location: z.string().min(1).optional(),
    count: z.number().int().positive().optional(),
    everyNth: z.number().int().min(2).optional(),
  })
  .strict();

export type VerdaFault = z.infer<typeof verdaFaultSchema>;
export type ActiveVerdaFault = ActiveFault<VerdaFault>;

export function parseVerdaFault(input: unknown): VerdaFault {
  return parseFaultWith(verdaFaultSchema, 'Verda', input);
}

export function parseVerdaFaultFlag(flag: string): VerdaFault {
  return parseFaultFlag(flag, {
    codes: VERDA_FAULT_CODES,
    typeField: 'instanceType',
    typeName: 'INSTANCE_TYPE',
    throttleCode: 'RATE_LIMITED',
    parse: parseVerdaFault,
  });
}

export class VerdaEmulatorFaults extends EmulatorFaultList<VerdaFault, ActiveVerdaFault> {
  constructor() {
    super((fault, id) => ({ ...parseVerdaFault(fault), id, fired: 0, seen: 0 }));
  }

  fire(
    code: VerdaFaultCode,
    deploy?: { instanceType: string; location: string },
  ): ActiveVerdaFault | undefined {
    for (const fault of [...this.faults]) {
      if (fault.code !== code) continue;
      if (fault.instanceType !== undefined && fault.instanceType !== deploy?.instanceType) continue;
      if (fault.location !== undefined && fault.location !== deploy?.location) continue;
      if (this.countRequest(fault)) return fault;
    }
    return undefined;
  }
}
