/** What this process keeps of projects: rows the pipelines reuse, and their decrypted SSH keys. */
import type { ProjectsTable } from '../db/schema.js';

export interface ProjectCaches {
  /** Project rows the pipelines reuse for a few seconds (`projectOf`), by project id. */
  rows: Map<string, { row: ProjectsTable; expiresAt: number }>;
  /** Decrypted project SSH keys by project row (rows come from `rows`, so they go with it). */
  sshKeys: WeakMap<ProjectsTable, string>;
}

export function createProjectCaches(): ProjectCaches {
  return { rows: new Map(), sshKeys: new WeakMap() };
}
