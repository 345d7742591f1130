/**
 * How long a job has gone without an SSH connection: dstack's `no_connections_secs`, which the
 * server compares with a dev environment's `inactivity_duration`. The clock starts when the job
 * starts running (dstack's runner starts tracking then) and restarts whenever the last open
 * connection closes. Only logged-in connections count: a probe or a refused key keeps nothing alive.
 */
export class SshConnectionActivity {
  private openConnections = 0;
  /** When the job started running (epoch ms); undefined before. */
  private startedAt: number | undefined;
  /** When the last open connection closed (epoch ms); undefined while none has. */
  private lastClosedAt: number | undefined;

  /** Starts the clock: the job runs. Later calls change nothing. */
  start(): void {
    this.startedAt ??= Date.now();
  }

  /** Records a connection that logged in; returns what to call once it closes. */
  opened(): () => void {
    this.openConnections++;
    let closed = false;
    return () => {
      if (closed) return;
      closed = true;
      this.openConnections--;
      if (this.openConnections === 0) this.lastClosedAt = Date.now();
    };
  }

  /** Whole seconds without a connection; 0 while one is open or before the job runs. */
  noConnectionsSecs(): number {
    if (this.startedAt === undefined || this.openConnections > 0) return 0;
    const idleSince = Math.max(this.startedAt, this.lastClosedAt ?? this.startedAt);
    return Math.max(0, Math.floor((Date.now() - idleSince) / 1000));
  }
}
