/** What this process keeps of runs between passes: instances being taken, and the attach window's memory. */
import { InstanceTakes } from './instance-takes.js';

/** The attach window's memory (attach-window.ts): which runs dstack's client submitted, and when their jobs started. */
export class AttachWindowMemory {
  /** Runs submitted by dstack's client, with when. */
  readonly pollingClientRuns = new Map<string, number>();
  /** When each job of such a run became running (its start is not a column). */
  readonly runningSince = new Map<string, number>();
}

export interface RunCaches {
  /** The fleet instances this process's job passes are taking, so that they do not all try the same one. */
  instanceTakes: InstanceTakes;
  /** Which runs dstack's client submitted, and when their jobs started (see attach-window.ts). */
  attachWindow: AttachWindowMemory;
}

export function createRunCaches(): RunCaches {
  return { instanceTakes: new InstanceTakes(), attachWindow: new AttachWindowMemory() };
}
