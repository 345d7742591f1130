/**
 * The real Kubernetes cluster the Kubernetes backend's tests run against: the one-node cluster
 * `scripts/services/ensure-kubernetes.sh` starts on this machine. Tests skip when it does not run,
 * except where `DSTACK_TEST_REQUIRE_KUBERNETES=true`: `.ci/run` starts the cluster and sets it, so
 * under CI a cluster that does not run fails them, as for Postgres.
 */
import { execFile } from 'node:child_process';
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
