/**
 * Faults the Vast.ai emulator injects on demand, from tests (`emulator.addFault`), over HTTP
 * (`POST /_emulator/faults`) and from the command line (`--fault CODE[:ROUTE]`). Each arrives
 * the way Vast.ai shows it: a plain-text 429, a slow answer, an ask gone by the time it is
 * rented, a rental whose image pull or container start fails, an interruptible rental outbid.
 */
import { z } from 'zod';
import {
  type ActiveFault,
  EmulatorFaultList,
  parseFaultFlag,
  parseFaultWith,
} from '../emulator-fault-list.js';

/** The API's routes as faults name them. */
export const VASTAI_ROUTES = ['search', 'rent', 'show', 'list', 'destroy', 'user'] as const;
export type VastaiRoute = (typeof VASTAI_ROUTES)[number];

export const VASTAI_FAULT_CODES = [
  /** 429 "API requests too frequent…" in plain text, without Retry-After (`route`, or every route). */
  'RATE_LIMITED',
  /** The answer comes `delayMs` late (default 5000; `route`, or every route). */
  'SLOW_RESPONSE',
  /** The rented ask (`askId`, or any) is gone by the time of the rental: `no_such_ask`, and out of the book. */
  'ASK_VANISHED',
  /** The rental (of `image`, or any) fails to pull its image: it stays `loading`, Docker's pull error in `status_msg`. */
  'IMAGE_PULL_FAILED',
  /** The rental's container fails to start: `created` with `OCI runtime create failed` in `status_msg`. */
  'OCI_RUNTIME_CREATE_FAILED',
  /** An interruptible rental (of `askId`, or any) is outbid `afterRunningMs` after it runs: its container stops. */
  'OUTBID',
] as const;

export type VastaiFaultCode = (typeof VASTAI_FAULT_CODES)[number];

const ROUTE_CODES: readonly VastaiFaultCode[] = ['RATE_LIMITED', 'SLOW_RESPONSE'];

const vastaiFaultSchema = z
  .object({
    code: z.enum(VASTAI_FAULT_CODES),
    /** RATE_LIMITED, SLOW_RESPONSE: only this route; every route when absent. */
    route: z.enum(VASTAI_ROUTES).optional(),
    /** ASK_VANISHED, OUTBID: only rentals of this ask. */
    askId: z.number().int().positive().optional(),
    /** IMAGE_PULL_FAILED, OCI_RUNTIME_CREATE_FAILED: only rentals of this image. */
    image: z.string().min(1).optional(),
    /** How many times the fault fires before it is removed; it stays until cleared when absent. */
    count: z.number().int().positive().optional(),
    /** Fire on one request of every `everyNth` (2 = every other one). */
    everyNth: z.number().int().min(2).optional(),
    /** SLOW_RESPONSE: how late the answer comes. Default 5000. */
    delayMs: z.number().int().nonnegative().optional(),
    /** OUTBID: how long the rental runs before it is outbid. Default 2000. */
    afterRunningMs: z.number().int().nonnegative().optional(),
  })
  .strict()
  .superRefine((fault, context) => {
    if (fault.route !== undefined && !ROUTE_CODES.includes(fault.code)) {
      context.addIssue({
        code: 'custom',
        path: ['route'],
        message: `only ${ROUTE_CODES.join(' and ')} take a route`,
      });
    }
  });

export type VastaiFault = z.infer<typeof vastaiFaultSchema>;
export type ActiveVastaiFault = ActiveFault<VastaiFault>;

export const DEFAULT_VASTAI_SLOW_RESPONSE_MS = 5000;
export const DEFAULT_VASTAI_OUTBID_AFTER_MS = 2000;

/** Validates a fault given over HTTP or by a test; the error names the bad field. */
export function parseVastaiFault(input: unknown): VastaiFault {
  return parseFaultWith(vastaiFaultSchema, 'Vast.ai', input);
}

/** `CODE[:ROUTE]`, e.g. `SLOW_RESPONSE:search`; RATE_LIMITED from the command line throttles every other request. */
export function parseVastaiFaultFlag(flag: string): VastaiFault {
  return parseFaultFlag(flag, {
    codes: VASTAI_FAULT_CODES,
    typeField: 'route',
    typeName: 'ROUTE',
    throttleCode: 'RATE_LIMITED',
    parse: parseVastaiFault,
  });
}

/** What a request or rental looks like to the faults that may hit it. */
export interface VastaiFaultTarget {
  readonly route?: VastaiRoute;
  readonly askId?: number;
  readonly image?: string;
}

export class VastaiEmulatorFaults extends EmulatorFaultList<VastaiFault, ActiveVastaiFault> {
  constructor() {
    super((fault, id) => ({ ...parseVastaiFault(fault), id, fired: 0, seen: 0 }));
  }

  /** The first fault with `code` that applies to `target`, counted as fired (removed once its count is used). */
  fire(code: VastaiFaultCode, target: VastaiFaultTarget = {}): ActiveVastaiFault | undefined {
    for (const fault of [...this.faults]) {
      if (fault.code !== code || !matchesTarget(fault, target)) continue;
      if (this.countRequest(fault)) return fault;
    }
    return undefined;
  }
}

function matchesTarget(fault: VastaiFault, target: VastaiFaultTarget): boolean {
  if (fault.route !== undefined && fault.route !== target.route) return false;
  if (fault.askId !== undefined && fault.askId !== target.askId) return false;
  if (fault.image !== undefined && fault.image !== target.image) return false;
  return true;
}
