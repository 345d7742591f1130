/**
 * Why a pod will never run the job, in the cluster's own words: the kubelet's container
 * waiting reasons that do not heal (an image it cannot pull or find, a container it cannot
 * create), a failed pod (evicted, its node gone), and the scheduler's Unschedulable condition.
 */
import type { KubernetesObject } from './kubernetes-api.js';

/** Waiting reasons after which the container never starts by itself. */
const TERMINAL_WAITING_REASONS = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'ErrImageNeverPull',
  'InvalidImageName',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
]);

/** `reason: message` of a pod that will not run, or null while it may. */
export function podFailure(pod: KubernetesObject): string | null {
  const name = pod.metadata?.name ?? 'pod';
  const phase = pod.status?.phase;
  if (phase === 'Failed' || phase === 'Succeeded') {
    const words = [pod.status?.reason, pod.status?.message].filter(Boolean).join(': ');
    const terminated = (pod.status?.containerStatuses ?? [])
      .map(
        (status: { state?: { terminated?: { reason?: string; exitCode?: number } } }) =>
          status.state?.terminated,
      )
      .find(Boolean);
    const detail =
      words || (terminated ? `${terminated.reason ?? 'terminated'} (exit code ${terminated.exitCode})` : '');
    return `pod ${name} ${phase === 'Failed' ? 'failed' : 'exited'}${detail ? `: ${detail}` : ''}`;
  }
  for (const status of pod.status?.containerStatuses ?? []) {
    const waiting = status.state?.waiting as { reason?: string; message?: string } | undefined;
    if (waiting?.reason && TERMINAL_WAITING_REASONS.has(waiting.reason)) {
      // The kubelet's words name the registry, not always the image: name it.
      const image = typeof status.image === 'string' && status.image ? ` (image ${status.image})` : '';
      return `pod ${name}: ${waiting.reason}${image}${waiting.message ? `: ${waiting.message}` : ''}`;
    }
  }
  return null;
}

/**
 * The scheduler's reason (`Unschedulable: 0/1 nodes are available: 1 Insufficient cpu.`) when
 * the pod has been unschedulable for `afterMs` since its creation, else null.
 */
export function unschedulableReason(pod: KubernetesObject, afterMs: number, now = Date.now()): string | null {
  const conditions: Array<{ type?: string; status?: string; reason?: string; message?: string }> =
    pod.status?.conditions ?? [];
  const scheduled = conditions.find((condition) => condition.type === 'PodScheduled');
  if (scheduled?.status !== 'False' || scheduled.reason !== 'Unschedulable') return null;
  const created = Date.parse(String(pod.metadata?.creationTimestamp ?? ''));
  if (Number.isFinite(created) && now - created < afterMs) return null;
  return `${scheduled.reason}: ${scheduled.message ?? 'no message'}`;
}
