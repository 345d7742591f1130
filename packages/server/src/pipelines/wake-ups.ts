/**
 * In-process wake-ups: a service that changes a row's state wakes the pipeline
 * that handles the new state, so it reacts in milliseconds instead of at its
 * next polling tick. Other replicas see the change at their own next tick.
 */
export type PipelineName =
  | 'runs'
  | 'jobs-submitted'
  | 'jobs-running'
  | 'jobs-terminating'
  | 'instances'
  | 'fleets'
  | 'volumes'
  | 'gateways';

export class WakeUps {
  readonly #listeners = new Map<PipelineName, Set<() => void>>();

  /** Wakes `pipeline` now (coalesced: several wake-ups before its fetch make one fetch). */
  wake(...pipelines: PipelineName[]): void {
    for (const pipeline of pipelines) {
      for (const listener of this.#listeners.get(pipeline) ?? []) listener();
    }
  }

  subscribe(pipeline: PipelineName, listener: () => void): () => void {
    let listeners = this.#listeners.get(pipeline);
    if (!listeners) {
      listeners = new Set();
      this.#listeners.set(pipeline, listeners);
    }
    listeners.add(listener);
    return () => listeners.delete(listener);
  }
}
