import { mkdir, rm, writeFile } from 'node:fs/promises';
import { homedir, userInfo } from 'node:os';
import { join, relative, resolve } from 'node:path';
import {
  type RunnerPullResponse,
  type RunnerRunResponse,
  type RunnerSubmission,
  RunnerTerminationReason,
} from '@dstack/core/agent-protocol';
import { allowTraversal, chownTree } from './hand-over-directory.js';
import { extractJobArchive, repoDirOf, setUpJobCode } from './job-code.js';
import { buildJobEnvironment, formatMpiHostfile } from './job-environment.js';
import { JobEventLog, type JobEventLogOptions } from './job-event-log.js';
import { JobProcess } from './job-process.js';
import {
  currentProcessIdentity,
  describeJobUser,
  type JobSpecUser,
  type JobUser,
  JobUserError,
  jobUserEnvironment,
  loadJobUser,
  type SpawnIdentity,
  spawnIdentityFor,
} from './job-user.js';
import { terminalLessCommandLine } from './terminal-less-command.js';
import type { UserDatabasePaths } from './user-database.js';

/** A request that does not fit the job's lifecycle (run before submit, second submit, ...). */
export class JobStateConflictError extends Error {
  override readonly name = 'JobStateConflictError';
}

export interface JobExecutorOptions extends JobEventLogOptions {
  /** The runner's home: the repo is extracted into `<homeDir>/workflow`. */
  homeDir: string;
  /** The environment jobs start from: never the runner's whole `process.env` unless it is a container's. */
  baseEnv: Readonly<Record<string, string | undefined>>;
  /**
   * Who jobs run as when their spec names no `user`: `uid[:gid]` or `name[:group]` (a shim passes
   * its task's `container_user`). Default: the runner's own user, with its environment unchanged.
   */
  defaultUser?: string;
  /** Where users and groups are looked up. Default: `/etc/passwd` and `/etc/group`. */
  userDatabase?: UserDatabasePaths;
}

/** Who the job runs as: the user (undefined: the runner's own) and the ids to switch to, if any. */
interface JobLaunchUser {
  user: JobUser | undefined;
  spawnAs: SpawnIdentity | undefined;
}

/** Who the job's commands run as, where and with what environment; SSH sessions get the same. */
export interface JobLaunch extends JobLaunchUser {
  workingDir: string;
  env: Record<string, string>;
  mpiHostfilePath: string;
}

/** Grace period between SIGTERM and SIGKILL when the job spec has no `stop_duration`. */
const DEFAULT_STOP_DURATION_SECONDS = 5;

type Phase = 'waiting' | 'submitted' | 'running' | 'finished';

/**
 * Runs one job through dstack's runner lifecycle: submit → (upload code) → run → done, failed
 * or terminated, recording states and output in a {@link JobEventLog}.
 */
export class JobExecutor {
  private readonly events: JobEventLog;
  private phase: Phase = 'waiting';
  private submission: RunnerSubmission | undefined;
  private resolvedLaunch: Promise<JobLaunch> | undefined;
  private job: JobProcess | undefined;
  private finished: Promise<void> = Promise.resolve();
  private readonly uploaded: { codePath: string | undefined; archivePaths: Map<string, string> } = {
    codePath: undefined,
    archivePaths: new Map(),
  };
  private stopRequested = false;
  private killTimer: NodeJS.Timeout | undefined;
  /** When the pending SIGKILL fires (epoch ms). */
  private killAt = Number.POSITIVE_INFINITY;

  constructor(private readonly options: JobExecutorOptions) {
    this.events = new JobEventLog(options);
  }

  /** The default working directory, where a legacy upload (a job without `repo_data`) is extracted. */
  get repoDir(): string {
    return join(this.options.homeDir, 'workflow');
  }

  /** Where uploads wait for `run`; removed once the code is in place. */
  get uploadsDir(): string {
    return join(this.options.homeDir, '.uploads');
  }

  submit(submission: RunnerSubmission): void {
    if (this.phase !== 'waiting') {
      throw new JobStateConflictError('a job was already submitted to this runner');
    }
    this.submission = submission;
    this.phase = 'submitted';
    this.events.addRunnerLog(`job ${submission.job_spec.job_name} submitted`);
  }

  /**
   * Takes the job's code (a file on disk). A job with `repo_data` keeps it for `run`, which checks
   * the repo out (returns true: the file is the executor's now). A job without (dstack's legacy
   * upload) has it extracted at once into the repo directory.
   */
  async uploadCode(archivePath: string, archiveBytes: number): Promise<boolean> {
    const submission = this.submission;
    if (this.phase !== 'submitted' || submission === undefined) {
      throw new JobStateConflictError('code can be uploaded only after submit and before run');
    }
    if (submission.job_spec.repo_data) {
      this.uploaded.codePath = archiveBytes === 0 ? undefined : archivePath;
      this.events.addRunnerLog(`code received (${archiveBytes} bytes)`);
      return archiveBytes > 0;
    }
    if (archiveBytes === 0) {
      this.events.addRunnerLog('empty code archive: nothing to extract');
      return false;
    }
    await extractJobArchive(submission, archivePath, this.repoDir, 'The code');
    this.events.addRunnerLog(`code extracted into ${this.repoDir} (${archiveBytes} bytes)`);
    return false;
  }

  /** Takes a file archive of the job (`file_archives[].id`), unpacked at its path by `run`. */
  uploadArchive(id: string, archivePath: string): void {
    if (this.phase !== 'submitted') {
      throw new JobStateConflictError('file archives can be uploaded only after submit and before run');
    }
    this.uploaded.archivePaths.set(id, archivePath);
  }

  async run(): Promise<RunnerRunResponse> {
    const submission = this.submission;
    if (this.phase !== 'submitted' || submission === undefined) {
      throw new JobStateConflictError(
        this.phase === 'waiting' ? 'submit a job before running it' : 'the job was already started',
      );
    }
    this.phase = 'running';
    const workingDir = this.workingDirOf(submission);
    const response = { working_dir: workingDir, username: currentUsername() };
    this.events.addState('running');
    try {
      const { user, spawnAs, env, mpiHostfilePath } = await this.launch();
      if (user !== undefined) response.username = user.username === '' ? String(user.uid) : user.username;
      // The working directory is usually inside the repo: one recursive mkdir makes both.
      const firstCreated = await mkdir(workingDir, { recursive: true });
      const outsideRepo = relative(this.repoDir, workingDir).startsWith('..');
      if (outsideRepo) await mkdir(this.repoDir, { recursive: true });
      const filled = await setUpJobCode({
        submission,
        workingDir,
        homeDir: user?.homeDir ?? homedir(),
        uploaded: this.uploaded,
        scratchDir: this.uploadsDir,
        log: (message) => this.events.addRunnerLog(message),
      });
      await rm(this.uploadsDir, { recursive: true, force: true });
      if (spawnAs !== undefined) {
        // The runner (root) made these; the job's user must be able to reach and write them.
        await allowTraversal(this.options.homeDir);
        await chownTree(this.repoDir, spawnAs);
        if (outsideRepo && firstCreated !== undefined) await chownTree(firstCreated, spawnAs);
        for (const directory of filled) await chownTree(directory, spawnAs);
      }
      await mkdir(join(this.options.homeDir, 'mpi'), { recursive: true });
      await writeFile(mpiHostfilePath, formatMpiHostfile(submission));
      if (this.currentPhase() !== 'running') {
        // Stopped while the directories were being prepared.
        return response;
      }
      // dstack's job spec: `commands` is the argv (the server's `<shell> -i -c ...` or an entrypoint).
      const [command, ...args] = terminalLessCommandLine(submission.job_spec.commands);
      if (command === undefined) {
        throw new Error(
          "the job spec has no commands: set `commands` or `entrypoint` (the image's own ENTRYPOINT and CMD are not run)",
        );
      }
      this.events.addRunnerLog(
        `starting the job in ${workingDir}${user === undefined ? '' : ` as ${describeJobUser(user)}`}`,
      );
      const job = new JobProcess({
        command,
        args,
        cwd: workingDir,
        env,
        spawnAs,
        onLine: (source, line) => this.events.addJobLog(source, line),
      });
      this.job = job;
      this.finished = job.exit.then((exit) => this.finish(exit));
    } catch (error) {
      this.failToStart(error);
    }
    return response;
  }

  /**
   * Graceful stop: SIGTERM to the job's process group, SIGKILL after `graceSeconds` (default:
   * the job's `stop_duration`, or 5). Resolves once the job has exited.
   */
  async stop(graceSeconds?: number): Promise<void> {
    if (this.phase === 'finished') {
      return this.finished;
    }
    const grace = graceSeconds ?? this.submission?.job_spec.stop_duration ?? DEFAULT_STOP_DURATION_SECONDS;
    if (this.phase !== 'running' || this.job === undefined) {
      // Nothing started yet: the job ends here, a later run is refused.
      this.phase = 'finished';
      this.events.addState('terminated', { terminationReason: RunnerTerminationReason.terminatedByUser });
      return;
    }
    const killAt = Date.now() + grace * 1000;
    if (!this.stopRequested) {
      this.stopRequested = true;
      this.events.addRunnerLog(`stopping the job: SIGTERM, SIGKILL in ${grace}s`);
      this.job.signalGroup('SIGTERM');
    } else if (killAt >= this.killAt) {
      return this.finished;
    }
    // A later stop with a shorter grace (a shim's terminate after the server's stop) brings the kill forward.
    this.killAt = killAt;
    clearTimeout(this.killTimer);
    this.killTimer = setTimeout(() => this.job?.signalGroup('SIGKILL'), grace * 1000);
    return this.finished;
  }

  /** The job's shell (its process group id) while it runs or after; undefined before it starts. */
  get jobPid(): number | undefined {
    return this.job?.pid;
  }

  pull(timestamp: number): RunnerPullResponse {
    return this.events.pull(timestamp);
  }

  /**
   * The job's user, working directory and environment, resolved once and shared by the job and
   * its SSH sessions. Throws a {@link JobStateConflictError} before submit; rejects with a
   * {@link JobUserError} naming `user` when the job cannot run as its user.
   */
  launch(): Promise<JobLaunch> {
    const submission = this.submission;
    if (submission === undefined) {
      throw new JobStateConflictError('no job was submitted to this runner');
    }
    this.resolvedLaunch ??= this.resolveLaunch(submission);
    return this.resolvedLaunch;
  }

  private async resolveLaunch(submission: RunnerSubmission): Promise<JobLaunch> {
    const { user, spawnAs } = await this.launchUser(submission.job_spec.user);
    const workingDir = this.workingDirOf(submission);
    const mpiHostfilePath = join(this.options.homeDir, 'mpi', 'hostfile');
    const env = buildJobEnvironment({
      baseEnv: this.options.baseEnv,
      submission,
      repoDir: repoDirOf(submission, workingDir, user?.homeDir ?? homedir()) ?? this.repoDir,
      workingDir,
      mpiHostfilePath,
      userEnv: user === undefined ? undefined : jobUserEnvironment(user),
    });
    return { user, spawnAs, workingDir, env, mpiHostfilePath };
  }

  private workingDirOf(submission: RunnerSubmission): string {
    return resolve(this.repoDir, submission.job_spec.working_dir ?? '.');
  }

  /**
   * The job spec's `user`, else the runner's default; none means the runner's own user. Throws
   * a {@link JobUserError} naming `user` when it is unknown or the runner cannot switch to it.
   */
  private async launchUser(specUser: JobSpecUser | null | undefined): Promise<JobLaunchUser> {
    const requested =
      specUser === null || specUser === undefined || specUser === '' ? this.options.defaultUser : specUser;
    if (requested === undefined || requested === '') return { user: undefined, spawnAs: undefined };
    const user = await loadJobUser(requested, this.options.userDatabase);
    const runner = currentProcessIdentity();
    if (runner === undefined) {
      throw new JobUserError(
        `user: cannot run the job as ${describeJobUser(user)}: this system has no POSIX users`,
      );
    }
    return { user, spawnAs: spawnIdentityFor(user, runner) };
  }

  /** Read through a method: the phase changes across awaits, which narrowing does not see. */
  private currentPhase(): Phase {
    return this.phase;
  }

  private finish(exit: Awaited<JobProcess['exit']>): void {
    clearTimeout(this.killTimer);
    this.phase = 'finished';
    if (exit.kind === 'spawn-failed') {
      this.failToStart(exit.error);
      return;
    }
    // Background processes the job left behind would outlive it; dstack's container would be gone.
    this.job?.signalGroup('SIGKILL');
    const exitStatus = exit.code ?? null;
    const how = exit.signal !== null ? `signal ${exit.signal}` : `exit status ${exit.code}`;
    this.events.addRunnerLog(`job exited with ${how}`);
    if (this.stopRequested) {
      this.events.addState('terminated', {
        terminationReason: RunnerTerminationReason.terminatedByUser,
        exitStatus,
      });
    } else if (exit.code === 0) {
      this.events.addState('done', {
        terminationReason: RunnerTerminationReason.doneByRunner,
        exitStatus: 0,
      });
    } else {
      this.events.addState('failed', {
        terminationReason: RunnerTerminationReason.containerExitedWithError,
        terminationMessage: how,
        exitStatus,
      });
    }
  }

  private failToStart(error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    this.phase = 'finished';
    this.events.addRunnerLog(`the job could not start: ${message}`);
    this.events.addState('failed', {
      terminationReason: RunnerTerminationReason.executorError,
      terminationMessage: message,
    });
  }
}

/** The runner's user name; a container user without a passwd entry (`--user 1234`) has only its uid. */
function currentUsername(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? String(process.getuid?.() ?? '');
  }
}
