/** What the run pipeline remembers between passes about one replica's probes (see replica-probes.ts). */
export interface ProbeState {
  /** Successes in a row, per probe of the service (its index in `probes`). */
  successes: number[];
  /** When the replica is probed next (ms). */
  nextAt: number;
  /** The replica has been ready once: failing probes after that is a failure, not a slow start. */
  wasReady: boolean;
  /** Failures in a row since it was last ready. */
  failures: number;
}
