/**
 * Faults the Lambda emulator injects on demand, from tests (`emulator.addFault`), over HTTP
 * (`POST /_emulator/faults`) and from the command line (`--fault CODE[:INSTANCE_TYPE]`). Each
 * arrives as Lambda answers it, in its `{"error": {code, message, suggestion}}` envelope.
 */
import { z } from 'zod';
import {
  type ActiveFault,
  EmulatorFaultList,
  parseFaultFlag,
  parseFaultWith,
} from '../emulator-fault-list.js';

export const LAMBDA_FAULT_CODES = [
  /** A launch (of `instanceType` in `region`, or any) is 400 `instance-operations/launch/insufficient-capacity`. */
  'INSUFFICIENT_CAPACITY',
  /** A launch is 400 `global/quota-exceeded`. */
  'QUOTA_EXCEEDED',
  /** Every call is 401 `global/invalid-api-key`, as for a revoked key. */
  'INVALID_API_KEY',
  /** A call (a launch when `launchesOnly`) is 429 `global/too-many-requests`. */
  'RATE_LIMITED',
] as const;
export type LambdaFaultCode = (typeof LAMBDA_FAULT_CODES)[number];

const lambdaFaultSchema = z
  .object({
    code: z.enum(LAMBDA_FAULT_CODES),
    /** INSUFFICIENT_CAPACITY, QUOTA_EXCEEDED: only launches of this type. */
    instanceType: z.string().min(1).optional(),
    /** INSUFFICIENT_CAPACITY, QUOTA_EXCEEDED: only launches in this region. */
    region: z.string().min(1).optional(),
    /** RATE_LIMITED: only launches. */
    launchesOnly: z.boolean().optional(),
    count: z.number().int().positive().optional(),
    everyNth: z.number().int().min(2).optional(),
  })
  .strict();

export type LambdaFault = z.infer<typeof lambdaFaultSchema>;
export type ActiveLambdaFault = ActiveFault<LambdaFault>;

/** Validates a fault given over HTTP or by a test; the error names the bad field. */
export function parseLambdaFault(input: unknown): LambdaFault {
  return parseFaultWith(lambdaFaultSchema, 'Lambda', input);
}

/** `CODE[:INSTANCE_TYPE]`, e.g. `INSUFFICIENT_CAPACITY:gpu_1x_a10`. */
export function parseLambdaFaultFlag(flag: string): LambdaFault {
  return parseFaultFlag(flag, {
    codes: LAMBDA_FAULT_CODES,
    typeField: 'instanceType',
    typeName: 'INSTANCE_TYPE',
    throttleCode: 'RATE_LIMITED',
    parse: parseLambdaFault,
  });
}

/** What a call looks like to the faults that may hit it. */
export interface LambdaFaultTarget {
  readonly launch?: { readonly instanceType: string; readonly region: string };
}

export class LambdaEmulatorFaults extends EmulatorFaultList<LambdaFault, ActiveLambdaFault> {
  constructor() {
    super((fault, id) => ({ ...parseLambdaFault(fault), id, fired: 0, seen: 0 }));
  }

  /** The first fault with `code` that applies to `target`, counted as fired. */
  fire(code: LambdaFaultCode, target: LambdaFaultTarget = {}): ActiveLambdaFault | undefined {
    for (const fault of [...this.faults]) {
      if (fault.code !== code || !applies(fault, target)) continue;
      if (this.countRequest(fault)) return fault;
    }
    return undefined;
  }
}

function applies(fault: LambdaFault, target: LambdaFaultTarget): boolean {
  if (fault.launchesOnly && !target.launch) return false;
  if (fault.instanceType !== undefined && fault.instanceType !== target.launch?.instanceType) return false;
  if (fault.region !== undefined && fault.region !== target.launch?.region) return false;
  return true;
}
