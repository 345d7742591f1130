/**
 * The CoreV1 REST API of one cluster through undici: the few calls the backend makes (nodes,
 * pods, services, secrets, persistent volume claims, namespaces, events, `/version`), with the
 * kubeconfig's TLS and credentials. Only fields GA since 1.20 and unchanged since are used.
 */
import { BackendApiCallError } from '@dstack/core';
import { Agent, type Dispatcher, request } from 'undici';
import type { ApiServerAccess } from './kubeconfig.js';

/** A Kubernetes object as JSON (`metadata`, `spec`, `status`). */
export interface KubernetesObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    deletionTimestamp?: string;
    [key: string]: unknown;
  };
  // biome-ignore lint/suspicious/noExplicitAny: objects are read field by field where used.
  spec?: any;
  // biome-ignore lint/suspicious/noExplicitAny: as above.
  status?: any;
  [key: string]: unknown;
}

export interface KubernetesApiOptions {
  access: ApiServerAccess;
  /** Where requests go. Default: an undici Agent with the kubeconfig's TLS settings. */
  dispatcher?: Dispatcher;
  /** Per-request limit in milliseconds. Default 15 000. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 15_000;

/** A resource kind of CoreV1: its plural path segment, and whether it lives in a namespace. */
export type CoreResource =
  | 'pods'
  | 'services'
  | 'secrets'
  | 'persistentvolumeclaims'
  | 'events'
  | 'serviceaccounts';

/** The CoreV1 client of one cluster. */
export class KubernetesApi {
  readonly server: string;
  readonly #headers: Record<string, string>;
  readonly #dispatcher: Dispatcher;
  readonly #timeoutMs: number;

  constructor(options: KubernetesApiOptions) {
    const { access } = options;
    this.server = access.server;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#headers = { accept: 'application/json' };
    if (access.token) this.#headers.authorization = `Bearer ${access.token}`;
    else if (access.username !== undefined) {
      const basic = Buffer.from(`${access.username}:${access.password ?? ''}`).toString('base64');
      this.#headers.authorization = `Basic ${basic}`;
    }
    this.#dispatcher =
      options.dispatcher ??
      new Agent({
        connect: {
          ca: access.certificateAuthority,
          cert: access.clientCertificate,
          key: access.clientKey,
          rejectUnauthorized: !access.insecureSkipTlsVerify,
        },
      });
  }

  /** `GET /version`: the server's build (`gitVersion`). */
  version(signal?: AbortSignal): Promise<{ gitVersion?: string }> {
    return this.#json('GET', '/version', undefined, signal) as Promise<{ gitVersion?: string }>;
  }

  /** The cluster's nodes; `limit` caps the answer (a credentials check asks for one). */
  listNodes(signal?: AbortSignal, limit?: number): Promise<KubernetesObject[]> {
    return this.#items(`/api/v1/nodes${limit ? `?limit=${limit}` : ''}`, signal);
  }

  readNode(name: string): Promise<KubernetesObject | null> {
    return this.#orNull(this.#json('GET', `/api/v1/nodes/${encodeURIComponent(name)}`));
  }

  /** Pods of every namespace, optionally filtered by a field selector (`status.phase!=Succeeded`). */
  listAllPods(fieldSelector?: string, signal?: AbortSignal): Promise<KubernetesObject[]> {
    const query = fieldSelector ? `?fieldSelector=${encodeURIComponent(fieldSelector)}` : '';
    return this.#items(`/api/v1/pods${query}`, signal);
  }

  /** Objects of a kind in a namespace, optionally by label or field selector. */
  list(
    namespace: string,
    resource: CoreResource,
    selectors: { labelSelector?: string; fieldSelector?: string } = {},
  ): Promise<KubernetesObject[]> {
    const query = new URLSearchParams();
    if (selectors.labelSelector) query.set('labelSelector', selectors.labelSelector);
    if (selectors.fieldSelector) query.set('fieldSelector', selectors.fieldSelector);
    const suffix = query.size > 0 ? `?${query}` : '';
    return this.#items(`${namespacePath(namespace)}/${resource}${suffix}`);
  }

  /** The object, or null when it does not exist. */
  read(namespace: string, resource: CoreResource, name: string): Promise<KubernetesObject | null> {
    return this.#orNull(
      this.#json('GET', `${namespacePath(namespace)}/${resource}/${encodeURIComponent(name)}`),
    );
  }

  /** Creates the object; null when one of its name exists already (409). */
  create(
    namespace: string,
    resource: CoreResource,
    body: KubernetesObject,
  ): Promise<KubernetesObject | null> {
    return this.#orNull(this.#json('POST', `${namespacePath(namespace)}/${resource}`, body), 409);
  }

  /**
   * Deletes the object (in the background); false when it was gone. `gracePeriodSeconds`
   * overrides the pod's own grace period (0: removed from the API at once, as `--force`).
   */
  async delete(
    namespace: string,
    resource: CoreResource,
    name: string,
    options: { gracePeriodSeconds?: number } = {},
  ): Promise<boolean> {
    const path = `${namespacePath(namespace)}/${resource}/${encodeURIComponent(name)}`;
    const body =
      options.gracePeriodSeconds === undefined
        ? undefined
        : { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: options.gracePeriodSeconds };
    return (await this.#orNull(this.#json('DELETE', path, body))) !== null;
  }

  readNamespace(name: string): Promise<KubernetesObject | null> {
    return this.#orNull(this.#json('GET', `/api/v1/namespaces/${encodeURIComponent(name)}`));
  }

  async createNamespace(name: string): Promise<void> {
    await this.#orNull(
      this.#json('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }),
      409,
    );
  }

  /** Deletes the namespace and everything in it; false when it was gone. */
  async deleteNamespace(name: string): Promise<boolean> {
    return (
      (await this.#orNull(this.#json('DELETE', `/api/v1/namespaces/${encodeURIComponent(name)}`))) !== null
    );
  }

  async close(): Promise<void> {
    await this.#dispatcher.close();
  }

  async #items(path: string, signal?: AbortSignal): Promise<KubernetesObject[]> {
    const list = (await this.#json('GET', path, undefined, signal)) as { items?: KubernetesObject[] };
    return list.items ?? [];
  }

  /** The call's answer, or null when it is the status `missing` (404 by default). */
  async #orNull(call: Promise<unknown>, missing = 404): Promise<KubernetesObject | null> {
    try {
      return (await call) as KubernetesObject;
    } catch (error) {
      if (BackendApiCallError.isInstance(error) && error.statusCode === missing) return null;
      throw error;
    }
  }

  async #json(
    method: Dispatcher.HttpMethod,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
  ): Promise<unknown> {
    const url = `${this.server}${path}`;
    let response: Dispatcher.ResponseData;
    try {
      response = await request(url, {
        method,
        dispatcher: this.#dispatcher,
        headers:
          body === undefined ? this.#headers : { ...this.#headers, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
        signal,
      });
    } catch (error) {
      throw new BackendApiCallError(`Kubernetes API ${method} ${path} failed: ${(error as Error).message}`, {
        url,
        cause: error,
      });
    }
    const text = await response.body.text();
    if (response.statusCode >= 400) {
      throw new BackendApiCallError(
        `Kubernetes API ${method} ${path} answered ${response.statusCode}: ${statusMessage(text)}`,
        { statusCode: response.statusCode, url, responseBody: text.slice(0, 2000) },
      );
    }
    return text === '' ? {} : JSON.parse(text);
  }
}

function namespacePath(namespace: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}`;
}

/** The `message` of a `Status` answer, else the text. */
function statusMessage(text: string): string {
  try {
    const status = JSON.parse(text) as { message?: unknown };
    if (typeof status.message === 'string') return status.message;
  } catch {
    // not JSON: the text itself
  }
  return text.slice(0, 500);
}
