/**
 * Faults the RunPod emulator injects on demand, from tests (`emulator.addFault`), over HTTP
 * (`POST /_emulator/faults`) and from the command line (`--fault CODE[:OPERATION]`), each the way
 * RunPod shows it: a 429, a slow answer, a deploy that finds no machine (RunPod's GraphQL error
 * with HTTP 200).
 */
import { z } from 'zod';
import {
  type ActiveFault,
  EmulatorFaultList,
  parseFaultFlag,
  parseFaultWith,
} from '../emulator-fault-list.js';

export const RUNPOD_FAULT_CODES = [
  /** HTTP 429 `Too Many Requests` (`operation`, or every request). */
  'RATE_LIMITED',
  /** The answer comes `delayMs` late (default 5000; `operation`, or every request). */
  'SLOW_RESPONSE',
  /** A deploy (of `gpuTypeId`, or any) finds no machine: RunPod's "no longer any instances available" error. */
  'NO_CAPACITY',
] as const;
export type RunpodFaultCode = (typeof RUNPOD_FAULT_CODES)[number];

const runpodFaultSchema = z
  .object({
    code: z.enum(RUNPOD_FAULT_CODES),
    /** RATE_LIMITED, SLOW_RESPONSE: only requests with this top-level field (`gpuTypes`, `podTerminate`…). */
    operation: z.string().min(1).optional(),
    /** NO_CAPACITY: only deploys of this GPU type (or CPU offer). */
    gpuTypeId: z.string().min(1).optional(),
    /** How many times the fault fires before it is removed; it stays until cleared when absent. */
    count: z.number().int().positive().optional(),
    /** Fire on one request of every `everyNth` (2 = every other one). */
    everyNth: z.number().int().min(2).optional(),
    /** SLOW_RESPONSE: how late the answer comes. Default 5000. */
    delayMs: z.number().int().nonnegative().optional(),
  })
  .strict();

export type RunpodFault = z.infer<typeof runpodFaultSchema>;
export type ActiveRunpodFault = ActiveFault<RunpodFault>;

export const DEFAULT_RUNPOD_SLOW_RESPONSE_MS = 5000;

/** Validates a fault given over HTTP or by a test; the error names the bad field. */
export function parseRunpodFault(input: unknown): RunpodFault {
  return parseFaultWith(runpodFaultSchema, 'RunPod', input);
}

/** `CODE[:OPERATION]`, e.g. `SLOW_RESPONSE:gpuTypes`; RATE_LIMITED from the command line throttles every other request. */
export function parseRunpodFaultFlag(flag: string): RunpodFault {
  return parseFaultFlag(flag, {
    codes: RUNPOD_FAULT_CODES,
    typeField: 'operation',
    typeName: 'OPERATION',
    throttleCode: 'RATE_LIMITED',
    parse: parseRunpodFault,
  });
}

/** What a request or deploy looks like to the faults that may hit it. */
export interface RunpodFaultTarget {
  /** The request's top-level fields. */
  readonly operations?: readonly string[];
  readonly gpuTypeId?: string;
}

export class RunpodEmulatorFaults extends EmulatorFaultList<RunpodFault, ActiveRunpodFault> {
  constructor() {
    super((fault, id) => ({ ...parseRunpodFault(fault), id, fired: 0, seen: 0 }));
  }

  /** The first fault with `code` that applies to `target`, counted as fired. */
  fire(code: RunpodFaultCode, target: RunpodFaultTarget = {}): ActiveRunpodFault | undefined {
    for (const fault of [...this.faults]) {
      if (fault.code !== code) continue;
      if (fault.operation !== undefined && !target.operations?.includes(fault.operation)) continue;
      if (fault.gpuTypeId !== undefined && fault.gpuTypeId !== target.gpuTypeId) continue;
      if (this.countRequest(fault)) return fault;
    }
    return undefined;
  }
}
