import { type DockerEngineClient, DockerEngineError } from './docker-engine-client.js';

/** An image name split the way `POST /images/create` wants it. */
export interface ImageReference {
  /** Everything before the tag or digest, e.g. `ghcr.io/org/app` or `ubuntu`. */
  repository: string;
  /** The tag (`latest` when none is given) or the digest (`sha256:…`). */
  tag: string;
  /** The registry host the credentials are for; Docker Hub is `docker.io`. */
  registry: string;
}

const DOCKER_HUB = 'docker.io';

export function parseImageReference(imageName: string): ImageReference {
  let repository = imageName;
  let tag = 'latest';
  const digestAt = imageName.indexOf('@');
  if (digestAt >= 0) {
    repository = imageName.slice(0, digestAt);
    tag = imageName.slice(digestAt + 1);
  } else {
    // A colon after the last slash is a tag; one before it belongs to a registry's port.
    const colon = imageName.lastIndexOf(':');
    if (colon > imageName.lastIndexOf('/')) {
      repository = imageName.slice(0, colon);
      tag = imageName.slice(colon + 1);
    }
  }
  return { repository, tag, registry: registryOf(repository) };
}

/** Docker's rule: the first path part is a registry when it has a dot or a port, or is localhost. */
function registryOf(repository: string): string {
  const slash = repository.indexOf('/');
  if (slash < 0) return DOCKER_HUB;
  const first = repository.slice(0, slash);
  return first.includes('.') || first.includes(':') || first === 'localhost' ? first : DOCKER_HUB;
}

/**
 * The `X-Registry-Auth` header value: base64url JSON of the credentials, padded as Go's
 * `base64.URLEncoding` writes it (Docker 20.10 reads no other form and silently pulls without
 * credentials when it cannot decode the header).
 */
export function encodeRegistryAuth(username: string, password: string, serverAddress: string): string {
  const json = JSON.stringify({ username, password, serveraddress: serverAddress });
  return Buffer.from(json, 'utf8').toString('base64').replaceAll('+', '-').replaceAll('/', '_');
}

export interface EnsureImageOptions {
  imageName: string;
  registryUsername?: string;
  registryPassword?: string;
  /** Called once before a pull starts (the image is not present). */
  onPull?: () => void;
}

/** Whether the image exists locally (`GET /images/{name}/json`). */
export async function imageExists(client: DockerEngineClient, imageName: string): Promise<boolean> {
  try {
    await client.request({ method: 'GET', path: `/images/${encodeURIComponent(imageName)}/json` });
    return true;
  } catch (error) {
    if (DockerEngineError.isNotFound(error)) return false;
    throw error;
  }
}

/** The image's own user (`USER` in its Dockerfile, `Config.User`); empty when it sets none. */
export async function imageUser(client: DockerEngineClient, imageName: string): Promise<string> {
  const image = await client.requestJson<{ Config?: { User?: string | null } | null }>({
    method: 'GET',
    path: `/images/${encodeURIComponent(imageName)}/json`,
  });
  return image.Config?.User ?? '';
}

/**
 * Thrown when an image is missing and cannot be pulled. The message names the image and says
 * why in words a user acts on (the registry refused the credentials, the image does not exist),
 * then Docker's own message.
 */
export class ImagePullError extends Error {
  constructor(
    readonly imageName: string,
    readonly detail: string,
    withCredentials = false,
  ) {
    const cause = pullFailureCause(detail, withCredentials);
    super(`cannot pull image ${imageName}: ${cause ? `${cause} (${detail})` : detail}`);
    this.name = 'ImagePullError';
  }
}

/** Docker's answers when the registry has no such repository or tag. */
const IMAGE_MISSING = /manifest unknown|name unknown|not found/i;
/** Docker's answers when the registry wants (other) credentials. */
const AUTH_REFUSED =
  /unauthorized|authentication required|no basic auth credentials|incorrect username or password|access.*denied/i;

/**
 * What a failed pull's Docker message means, or null when it is something else (the registry
 * unreachable...). Docker Hub answers "pull access denied ... does not exist or may require
 * 'docker login'" for both a missing image and missing credentials: that one says both.
 */
export function pullFailureCause(detail: string, withCredentials: boolean): string | null {
  if (/pull access denied/i.test(detail)) {
    return withCredentials
      ? 'the registry refused the pull: the image does not exist or the credentials (registry_auth) are wrong'
      : 'the registry refused the pull: the image does not exist or needs credentials (registry_auth)';
  }
  if (AUTH_REFUSED.test(detail)) {
    return withCredentials
      ? 'the registry refused the credentials (registry_auth)'
      : 'the registry requires credentials: set registry_auth';
  }
  if (IMAGE_MISSING.test(detail)) return 'the image does not exist in its registry';
  return null;
}

/** Makes sure the image is present, pulling it when it is not. */
export async function ensureImage(client: DockerEngineClient, options: EnsureImageOptions): Promise<void> {
  if (await imageExists(client, options.imageName)) return;
  options.onPull?.();
  const reference = parseImageReference(options.imageName);
  const headers: Record<string, string> = {};
  const withCredentials = Boolean(options.registryUsername || options.registryPassword);
  if (withCredentials) {
    headers['x-registry-auth'] = encodeRegistryAuth(
      options.registryUsername ?? '',
      options.registryPassword ?? '',
      reference.registry,
    );
  }
  let progress: string;
  try {
    const response = await client.request({
      method: 'POST',
      path: '/images/create',
      query: { fromImage: reference.repository, tag: reference.tag },
      headers,
      longPoll: true,
    });
    progress = response.body.toString('utf8');
  } catch (error) {
    throw new ImagePullError(options.imageName, describe(error), withCredentials);
  }
  // A pull that fails after it started still answers 200; the error is in the progress stream.
  const streamError = findProgressError(progress);
  if (streamError !== undefined) throw new ImagePullError(options.imageName, streamError, withCredentials);
  if (!(await imageExists(client, options.imageName))) {
    throw new ImagePullError(options.imageName, 'the pull finished but the image is not present');
  }
}

/** The first `{"error": …}` message in a newline-delimited JSON progress stream. */
export function findProgressError(progress: string): string | undefined {
  for (const line of progress.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const message = JSON.parse(line) as { error?: unknown };
      if (typeof message.error === 'string') return message.error;
    } catch {
      // A progress line cut short is not an error report.
    }
  }
  return undefined;
}

function describe(error: unknown): string {
  if (error instanceof DockerEngineError) return error.dockerMessage;
  return error instanceof Error ? error.message : String(error);
}
