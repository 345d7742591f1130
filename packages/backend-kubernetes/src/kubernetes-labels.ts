/** The labels the backend puts on what it creates, as dstack's Kubernetes backend. */

/** dstack's labels (`build_base_labels`); the selector of a pod's Service is these. */
export function baseLabels(
  component: 'ssh-proxy' | 'job' | 'volume',
  uniqueName: string,
  project: string,
  extra: { name?: string; user?: string } = {},
): Record<string, string> {
  const labels: Record<string, string> = {
    'app.kubernetes.io/name': `dstack-${component}`,
    'app.kubernetes.io/instance': uniqueName,
    'app.kubernetes.io/managed-by': 'dstack',
    'k8s.dstack.ai/project': project,
  };
  if (extra.name !== undefined) labels['k8s.dstack.ai/name'] = extra.name;
  if (extra.user !== undefined) labels['k8s.dstack.ai/user'] = extra.user;
  return validLabels(labels);
}

const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?)?$/;

/** Labels whose value Kubernetes accepts (63 characters, alphanumerics and `-_.`); others dropped, as dstack. */
export function validLabels(labels: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(labels).filter(([, value]) => value.length <= 63 && LABEL_VALUE.test(value)),
  );
}
