/**
 * Builds each project's Computes from its `backends` rows and caches them.
 * A backend that fails to load is logged and reported by `getProjectBackendErrors`,
 * without hiding the project's other backends.
 */
import {
  assertComputeMatchesPlugin,
  type BackendPlugin,
  type Compute,
  ConfigurationError,
} from '@dstack/core';
import type { Kysely } from 'kysely';
import type { BackendsTable, Database } from '../db/schema.js';
import type { Encryption } from '../security/encryption.js';
import { withComputeDeadlines } from './compute-deadlines.js';
import {
  BACKEND_PACKAGES,
  listAvailableBackendTypes,
  loadBackendPlugin,
  type ModuleImporter,
} from './discovery.js';
import { hostBackendOwnerProblem } from './host-backends.js';

export interface ProjectBackend {
  type: string;
  plugin: BackendPlugin;
  compute: Compute;
}

export interface BackendLoadError {
  type: string;
  /** Why the backend is unusable, for the API and the logs. */
  message: string;
}

interface ProjectBackendsEntry {
  backends: ProjectBackend[];
  errors: BackendLoadError[];
}

export interface BackendRegistryOptions {
  /** How packages are imported; default `import()`. */
  importer?: ModuleImporter;
  /** Where load failures are reported; default `console.error`. */
  logError?: (message: string) => void;
}

/**
 * What the registry reads its rows with: the process's `AppContext`, whose `encryption` is
 * replaced once config.yml's keys are loaded (so it is read at each use).
 */
export interface BackendRegistryHost {
  readonly db: Kysely<Database>;
  readonly encryption: Encryption;
}

export class BackendRegistry {
  readonly #app: BackendRegistryHost;
  readonly #importer: ModuleImporter | undefined;
  readonly #logError: (message: string) => void;
  readonly #registered = new Map<string, BackendPlugin>();
  readonly #loaded = new Map<string, Promise<BackendPlugin>>();
  readonly #projects = new Map<string, Promise<ProjectBackendsEntry>>();

  constructor(app: BackendRegistryHost, options: BackendRegistryOptions = {}) {
    this.#app = app;
    this.#importer = options.importer;
    this.#logError = options.logError ?? ((message) => console.error(`[dstack-server] ${message}`));
  }

  /** Makes a plugin available without a package (tests, benchmarks, embedders); it wins over the package of its type. */
  registerPlugin(plugin: BackendPlugin): void {
    this.#registered.set(plugin.type, plugin);
    this.#loaded.delete(plugin.type);
    this.invalidate();
  }

  /** The plugin of backend `type`: a registered one, or its package's (imported once). */
  getPlugin(type: string): Promise<BackendPlugin> {
    const registered = this.#registered.get(type);
    if (registered) return Promise.resolve(registered);
    if (!BACKEND_PACKAGES[type]) {
      const known = [...new Set([...Object.keys(BACKEND_PACKAGES), ...this.#registered.keys()])];
      return Promise.reject(
        new ConfigurationError(`Unknown backend type "${type}"; known types: ${known.join(', ')}`),
      );
    }
    let loading = this.#loaded.get(type);
    if (!loading) {
      loading = loadBackendPlugin(type, this.#importer);
      // A failed import is retried next time (the package may have been installed meanwhile).
      loading.catch(() => this.#loaded.delete(type));
      this.#loaded.set(type, loading);
    }
    return loading;
  }

  /** Types that can be configured: registered plugins and installed packages. */
  async listAvailableTypes(): Promise<string[]> {
    const installed = await listAvailableBackendTypes(this.#importer);
    return [...new Set([...installed, ...this.#registered.keys()])].sort();
  }

  /** The project's usable backends (built once, until `invalidate`). */
  async getProjectBackends(projectId: string): Promise<ProjectBackend[]> {
    return (await this.#getEntry(projectId)).backends;
  }

  /** The Compute of the project's backend `type` (an instance's `backend`), or null when it is not usable. */
  async computeOf(projectId: string, type: string | null): Promise<Compute | null> {
    const backends = await this.getProjectBackends(projectId);
    return backends.find((backend) => backend.type === type)?.compute ?? null;
  }

  /** The project's backends that are configured but could not be loaded. */
  async getProjectBackendErrors(projectId: string): Promise<BackendLoadError[]> {
    return (await this.#getEntry(projectId)).errors;
  }

  /** Forgets the cached Computes of a project (after its backends changed), or of all projects. */
  invalidate(projectId?: string): void {
    if (projectId === undefined) this.#projects.clear();
    else this.#projects.delete(projectId);
  }

  #getEntry(projectId: string): Promise<ProjectBackendsEntry> {
    let entry = this.#projects.get(projectId);
    if (!entry) {
      entry = this.#build(projectId);
      entry.catch(() => this.#projects.delete(projectId));
      this.#projects.set(projectId, entry);
    }
    return entry;
  }

  async #build(projectId: string): Promise<ProjectBackendsEntry> {
    const rows = await this.#app.db
      .selectFrom('backends')
      .selectAll()
      .where('project_id', '=', projectId)
      .orderBy('type')
      .execute();
    const results = await Promise.all(rows.map((row) => this.#buildOne(row)));
    const entry: ProjectBackendsEntry = { backends: [], errors: [] };
    for (const result of results) {
      if ('compute' in result) entry.backends.push(result);
      else entry.errors.push(result);
    }
    return entry;
  }

  async #buildOne(row: BackendsTable): Promise<ProjectBackend | BackendLoadError> {
    try {
      const plugin = await this.getPlugin(row.type);
      // A row stored before host backends were refused to plain users' projects stays unusable.
      const refused = await hostBackendOwnerProblem(this.#app, row.project_id, plugin);
      if (refused) throw new ConfigurationError(refused);
      const configurator = plugin.createConfigurator();
      const compute = await configurator.getCompute({
        projectId: row.project_id,
        backendId: row.id,
        config: row.config,
        auth: this.#app.encryption.decrypt(row.auth),
      });
      assertComputeMatchesPlugin(plugin, compute);
      return { type: row.type, plugin, compute: withComputeDeadlines(compute) };
    } catch (error) {
      const message = `Backend "${row.type}" of project ${row.project_id} cannot be loaded: ${(error as Error).message}`;
      this.#logError(message);
      return { type: row.type, message };
    }
  }
}
