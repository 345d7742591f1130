/**
 * The real Kubernetes cluster the Kubernetes backend's tests run against: the one-node cluster
 * `scripts/services/ensure-kubernetes.sh` starts on this machine. Tests skip when it does not run,
 * except where `DSTACK_TEST_REQUIRE_KUBERNETES=true`: `.ci/run` starts the cluster and sets it, so
 * under CI a cluster that does not run fails them, as for Postgres.
 */
import { execFile, spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The script, from `src` and `dist` alike (both three levels below the repository's `packages`). */
export const ENSURE_KUBERNETES_SCRIPT = fileURLToPath(
  new URL('../../../../scripts/services/ensure-kubernetes.sh', import.meta.url),
);
const CHECK_TIMEOUT_MS = 30_000;

/** What `ensure-kubernetes.sh` prints: the settings a user puts in config.yml. */
export interface KubernetesTestCluster {
  /** The kubeconfig file: the backend's `kubeconfig.filename`. */
  kubeconfigFile: string;
  /** The backend's `proxy_jump.hostname`: where the jump pod's NodePort answers. */
  proxyJumpHostname: string;
  /** This host as pods see it: where tests serve what pods download (the runner's runtime). */
  podNetworkGateway: string;
}

/** `KEY=value` lines as a record. */
function settingsOf(stdout: string): Record<string, string> {
  const settings: Record<string, string> = {};
  for (const line of stdout.split('\n')) {
    const match = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (match) settings[match[1]!] = match[2]!;
  }
  return settings;
}

let checked: Promise<KubernetesTestCluster | string> | undefined;

/**
 * The running test cluster (`ensure-kubernetes.sh --check`, which starts nothing), or why there
 * is none (then the caller skips); a missing cluster rejects when it is required. Once per process.
 */
export function kubernetesTestCluster(): Promise<KubernetesTestCluster | string> {
  checked ??= (async () => {
    let stdout: string;
    try {
      ({ stdout } = await run('bash', [ENSURE_KUBERNETES_SCRIPT, '--check'], { timeout: CHECK_TIMEOUT_MS }));
    } catch (error) {
      const why = (error as { stderr?: string }).stderr?.trim() || (error as Error).message;
      const reason = `no Kubernetes test cluster runs (scripts/services/ensure-kubernetes.sh starts one): ${why}`;
      if (process.env.DSTACK_TEST_REQUIRE_KUBERNETES === 'true') {
        throw new Error(`${reason} (DSTACK_TEST_REQUIRE_KUBERNETES=true: the Kubernetes tests must run)`);
      }
      return reason;
    }
    const settings = settingsOf(stdout);
    if (!settings.KUBECONFIG || !settings.PROXY_JUMP_HOSTNAME || !settings.POD_NETWORK_GATEWAY) {
      throw new Error(`ensure-kubernetes.sh --check printed no settings: ${stdout}`);
    }
    return {
      kubeconfigFile: settings.KUBECONFIG,
      proxyJumpHostname: settings.PROXY_JUMP_HOSTNAME,
      podNetworkGateway: settings.POD_NETWORK_GATEWAY,
    };
  })();
  return checked;
}

/** The machine-wide lock of the test cluster: one cluster per machine, whichever checkout runs. */
export const KUBERNETES_TEST_CLUSTER_LOCK = join(tmpdir(), 'dstack-kubernetes-test-cluster.lock');
const HOLD_TIMEOUT_MS = 600_000;

/**
 * Takes the test cluster for the calling file until the returned function is called. Its one
 * node has this machine's CPUs, which one file's pods fill (a 2-node task takes both cores
 * here), so the files that launch pods, of any checkout on the machine, take turns. `flock`
 * holds the lock while its child reads our stdin: a test process that dies releases it.
 * `timeoutMs` (default 10 minutes) bounds the wait; `lockFile` defaults to the machine's.
 */
export function holdKubernetesTestCluster(
  options: { timeoutMs?: number; lockFile?: string } = {},
): Promise<() => Promise<void>> {
  const { timeoutMs = HOLD_TIMEOUT_MS, lockFile = KUBERNETES_TEST_CLUSTER_LOCK } = options;
  return new Promise((resolve, reject) => {
    const holder = spawn(
      'flock',
      [
        '--exclusive',
        '--timeout',
        String(Math.ceil(timeoutMs / 1000)),
        lockFile,
        'sh',
        '-c',
        'echo held; exec cat >/dev/null',
      ],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let stderr = '';
    let held = false;
    const exited = new Promise<void>((done) => holder.once('close', () => done()));
    holder.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    holder.stdout.on('data', (chunk: Buffer) => {
      if (held || !chunk.toString().includes('held')) return;
      held = true;
      resolve(async () => {
        holder.stdin.end();
        await exited;
      });
    });
    holder.once('error', (error) =>
      reject(new Error(`flock ${lockFile}: ${error.message}`, { cause: error })),
    );
    holder.once('close', (code) => {
      if (!held) {
        reject(
          new Error(
            `the Kubernetes test cluster stayed taken by another test file for ${timeoutMs} ms (flock ${lockFile} exited ${code}: ${stderr.trim()})`,
          ),
        );
      }
    });
  });
}
