/**
 * dstack's own clients against this server: the requests dstack's 0.21 CLI and Python API sent
 * (recorded in dstack-client-traffic/cli-0.21-session.json, explicit nulls and all) are replayed
 * in order against a real server on the local backend, and every answer is checked against the
 * fields dstack's models require, with dstack's types (dstack-client-traffic/models.json). A field
 * missing or of another type there is a command of dstack's CLI that fails for its users.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Run } from '@dstack/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { attachLikeDstack } from './dstack-attach.js';
import { type GitHttpServer, startGitHttpServer } from './git-http-server.js';
import {
  ADMIN_TOKEN,
  type HarnessServer,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
} from './server-harness.js';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

type TypeSpec =
  | string
  | { enum: string[] }
  | { list: TypeSpec }
  | { anyOf: TypeSpec[] }
  | { nullable: TypeSpec };
interface ModelSpec {
  required: Record<string, TypeSpec>;
  optional: Record<string, TypeSpec>;
}
interface Step {
  command: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
  token?: string;
  /** After the step, before the next: wait for the run to run, or to finish (`status`, default done). */
  waitForRun?: { run_name: string; finished: boolean; status?: string };
  /** A multipart upload (repos/upload_code) instead of a JSON body: `text` as the file `field`. */
  upload?: { field: string; filename: string; text: string };
  /** Keeps the answer under this name for later steps (`me`: get_my_user). */
  capture?: string;
  expect: {
    status: number;
    model?: TypeSpec;
    errorCode?: string;
    expectLogText?: string;
    expectNextToken?: null;
    /** The plan's `run_spec.ssh_key_pub` is the user's own key (the client sent none). */
    expectOwnSshKey?: boolean;
    /** Attach to the answered run's first job as dstack's client does (dstack-attach.ts). */
    attach?: { exec: string; expectExecOutput: string; expectLogText: string };
  };
}

const fixtures = join(import.meta.dirname, 'dstack-client-traffic');
const models = (
  JSON.parse(readFileSync(join(fixtures, 'models.json'), 'utf8')) as { models: Record<string, ModelSpec> }
).models;
const session = JSON.parse(readFileSync(join(fixtures, 'cli-0.21-session.json'), 'utf8')) as {
  steps: Step[];
};

/** The session's steps in runs of one command each, in order. */
function stepsByCommand(
  steps: Step[],
): Array<{ command: string; steps: Array<{ index: number; step: Step }> }> {
  const groups: Array<{ command: string; steps: Array<{ index: number; step: Step }> }> = [];
  for (const [index, step] of steps.entries()) {
    const last = groups.at(-1);
    if (last?.command === step.command) last.steps.push({ index, step });
    else groups.push({ command: step.command, steps: [{ index, step }] });
  }
  return groups;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The problems of `value` against `type`, each naming its path: none when dstack's client parses it. */
function typeProblems(value: unknown, type: TypeSpec, path: string): string[] {
  if (typeof type !== 'string') {
    if ('nullable' in type) return value === null ? [] : typeProblems(value, type.nullable, path);
    if ('enum' in type) {
      return type.enum.includes(String(value)) && value !== null
        ? []
        : [`${path}: ${JSON.stringify(value)} is not one of ${type.enum.join(', ')}`];
    }
    if ('list' in type) {
      if (!Array.isArray(value)) return [`${path}: expected a list, got ${JSON.stringify(value)}`];
      return value.flatMap((item, index) => typeProblems(item, type.list, `${path}.${index}`));
    }
    const options = type.anyOf.map((option) => typeProblems(value, option, path));
    return options.some((problems) => problems.length === 0) ? [] : (options[0] ?? []);
  }
  const wrong = (what: string) => [`${path}: expected ${what}, got ${JSON.stringify(value)?.slice(0, 80)}`];
  switch (type) {
    case 'any':
      return [];
    case 'str':
      return typeof value === 'string' ? [] : wrong('a string');
    case 'int':
      return Number.isInteger(value) ? [] : wrong('an integer');
    case 'number':
      return typeof value === 'number' ? [] : wrong('a number');
    case 'bool':
      return typeof value === 'boolean' ? [] : wrong('a boolean');
    case 'datetime':
      return typeof value === 'string' && !Number.isNaN(Date.parse(value)) ? [] : wrong('a date-time');
    case 'uuid':
      return typeof value === 'string' && UUID.test(value) ? [] : wrong('a UUID');
    case 'object':
      return isObject(value) ? [] : wrong('an object');
  }
  const model = models[type];
  if (!model) throw new Error(`models.json has no model ${type} (used at ${path})`);
  if (!isObject(value)) return wrong(`a ${type} object`);
  const problems: string[] = [];
  for (const [field, fieldType] of Object.entries(model.required)) {
    if (!(field in value)) problems.push(`${path}.${field}: required by ${type}, missing`);
    else problems.push(...typeProblems(value[field], fieldType, `${path}.${field}`));
  }
  for (const [field, fieldType] of Object.entries(model.optional)) {
    const present = value[field];
    if (present !== undefined && present !== null) {
      problems.push(...typeProblems(present, fieldType, `${path}.${field}`));
    }
  }
  return problems;
}

describe('typeProblems', () => {
  it('names a missing required field, a wrong type and a value outside an enum', () => {
    const user = {
      id: '36898ce8-849e-4ae2-98e4-a33c9e536eac',
      username: 'a',
      global_role: 'admin',
      active: true,
    };
    expect(typeProblems(user, 'User', 'user')).toEqual(['user.permissions: required by User, missing']);
    expect(
      typeProblems(
        { ...user, permissions: { can_create_projects: 'yes' }, global_role: 'root' },
        'User',
        'u',
      ),
    ).toEqual([
      'u.global_role: "root" is not one of admin, user',
      'u.permissions.can_create_projects: expected a boolean, got "yes"',
    ]);
    expect(typeProblems({ ...user, permissions: { can_create_projects: true } }, 'User', 'u')).toEqual([]);
  });
});

describe("dstack's 0.21 client, replayed", () => {
  const temp = makeTempDir('dstack-client-traffic-');
  let harness: HarnessServer;
  let gitServer: GitHttpServer;
  /** The commit of the public repo the recorded repo task was made in (its branch `master`). */
  let repoHash: string;

  /** The repo dstack's client was run in, before its uncommitted change: file.txt committed. */
  function makePublicRepo(projectRoot: string): string {
    const git = (cwd: string, ...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=a', '-c', 'user.email=a@b', ...args], { cwd, encoding: 'utf8' });
    const seed = join(temp.dir, 'seed');
    mkdirSync(seed);
    git(seed, 'init', '--quiet', '--initial-branch=master');
    writeFileSync(join(seed, 'file.txt'), 'committed\n');
    git(seed, 'add', 'file.txt');
    git(seed, 'commit', '--quiet', '-m', 'init');
    git(temp.dir, 'clone', '--quiet', '--bare', seed, join(projectRoot, 'repo.git'));
    return git(seed, 'rev-parse', 'HEAD').trim();
  }

  beforeAll(async () => {
    const projectRoot = join(temp.dir, 'git');
    mkdirSync(projectRoot);
    repoHash = makePublicRepo(projectRoot);
    gitServer = await startGitHttpServer(projectRoot, null);
    harness = await startHarnessServer({ dir: temp.dir, config: localBackendConfig(temp.dir) });
  });
  afterAll(async () => {
    await harness?.terminateFleetsAndClose();
    await gitServer?.close();
    temp.remove();
  });

  /** The user's own SSH key pair, as get_my_user answers it. */
  async function myUser(): Promise<{ ssh_public_key: string; ssh_private_key: string }> {
    return (
      await harness.call<{ ssh_public_key: string; ssh_private_key: string }>('/api/users/get_my_user', {})
    ).body;
  }

  /**
   * The body with its placeholders filled: `{{job_submission_id:RUN}}` is RUN's latest submission,
   * `{{my_ssh_public_key}}` the user's own key.
   */
  async function fill(body: unknown): Promise<unknown> {
    let text = JSON.stringify(body)
      .replaceAll('{{git_url}}', `${gitServer.url}/repo.git`)
      .replaceAll('{{repo_hash}}', repoHash);
    if (text.includes('{{project_id}}')) {
      const project = await harness.call<{ project_id: string }>('/api/projects/main/get');
      text = text.replaceAll('{{project_id}}', project.body.project_id);
    }
    if (text.includes('{{my_ssh_public_key}}')) {
      text = text.replaceAll(
        '{{my_ssh_public_key}}',
        JSON.stringify((await myUser()).ssh_public_key).slice(1, -1),
      );
    }
    const names = [...text.matchAll(/\{\{job_submission_id:([a-z0-9-]+)\}\}/g)].map((match) => match[1]!);
    let filled = text;
    for (const name of names) {
      const run = (await harness.call<Run>('/api/project/main/runs/get', { run_name: name })).body;
      const submission = run.jobs[0]?.job_submissions.at(-1);
      if (!submission) throw new Error(`run ${name} has no job submission`);
      filled = filled.replaceAll(`{{job_submission_id:${name}}}`, submission.id);
    }
    return body === null ? undefined : JSON.parse(filled);
  }

  /** Answers kept by earlier steps for later ones, across the commands. */
  const captured = new Map<string, unknown>();

  async function replayStep(step: Step, where: string): Promise<void> {
    const body = await fill(step.body);
    let payload: { body?: string | FormData; headers?: Record<string, string> } = {};
    if (step.upload) {
      const form = new FormData();
      form.append(step.upload.field, new Blob([step.upload.text]), step.upload.filename);
      payload = { body: form };
    } else if (body !== undefined) {
      payload = { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } };
    }
    const response = await fetch(`${harness.server.url}${step.path}`, {
      method: step.method,
      headers: {
        ...step.headers,
        authorization: `Bearer ${step.token ?? ADMIN_TOKEN}`,
        ...payload.headers,
      },
      ...(payload.body === undefined ? {} : { body: payload.body }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    const answer: unknown = text ? JSON.parse(text) : null;
    expect(response.status, `${where}: ${text.slice(0, 500)}`).toBe(step.expect.status);
    if (step.expect.model) {
      expect(typeProblems(answer, step.expect.model, 'answer'), where).toEqual([]);
    }
    if (step.expect.status >= 400) {
      // dstack's client reads 400s as `{detail: [{msg, code}]}` and raises by code.
      const detail = (answer as { detail: Array<{ msg: string; code: string }> }).detail;
      expect(detail, where).toHaveLength(1);
      if (step.expect.errorCode) expect(detail[0]?.code, where).toBe(step.expect.errorCode);
    }
    if (step.expect.expectLogText !== undefined) {
      const page = answer as { logs: Array<{ message: string }>; next_token: string | null };
      const logged = page.logs.map((event) => Buffer.from(event.message, 'base64').toString()).join('');
      expect(logged, where).toBe(step.expect.expectLogText);
      // The last page ends with a null token: dstack's client polls until it gets one.
      expect(page.next_token, where).toBeNull();
    }
    if (step.capture) captured.set(step.capture, answer);
    if (step.expect.expectOwnSshKey) {
      const plan = answer as { run_spec: { ssh_key_pub: string | null } };
      expect(plan.run_spec.ssh_key_pub, where).toBe((await myUser()).ssh_public_key);
    }
    if (step.expect.attach) {
      const { attach } = step.expect;
      const me = captured.get('me') as { ssh_private_key: string } | undefined;
      if (!me) throw new Error(`${where}: attach needs the user captured as "me" first`);
      const info = (answer as Run).jobs[0]?.job_connection_info;
      if (!info?.sshproxy_hostname || !info.sshproxy_port || !info.sshproxy_upstream_id) {
        throw new Error(`${where}: the job has no sshproxy connection info`);
      }
      const attached = await attachLikeDstack(
        {
          hostname: info.sshproxy_hostname,
          port: info.sshproxy_port,
          upstreamId: info.sshproxy_upstream_id,
          privateKey: me.ssh_private_key,
        },
        attach.exec,
      );
      expect(attached.execOutput, where).toBe(attach.expectExecOutput);
      expect(attached.logText, where).toBe(attach.expectLogText);
    }
    if (step.waitForRun) {
      const statuses = step.waitForRun.finished ? ['done', 'failed', 'terminated'] : ['running'];
      const run = await harness.waitForRun(step.waitForRun.run_name, statuses, 60_000);
      if (step.waitForRun.finished) {
        const why = JSON.stringify(run.latest_job_submission?.termination_reason_message);
        expect(run.status, `${where}: ${why}`).toBe(step.waitForRun.status ?? 'done');
      }
    }
  }

  // One test per command dstack's client ran: each has its own time limit, and a failure names it.
  for (const { command, steps } of stepsByCommand(session.steps)) {
    it(`answers ${command} with the status, fields and types dstack expects`, async () => {
      for (const { index, step } of steps) {
        await replayStep(step, `step ${index} (${step.command}: ${step.path})`);
      }
    });
  }

  it("serves the routes of dstack's server its clients do not call yet: instances/get, projects/update", async () => {
    const instances = (await harness.call<Array<{ id: string }>>('/api/project/main/instances/list', {}))
      .body;
    const first = instances[0];
    if (!first) throw new Error('the local fleet has no instance');
    const instance = await harness.call('/api/project/main/instances/get', { id: first.id });
    expect(instance.status).toBe(200);
    expect(typeProblems(instance.body, 'Instance', 'answer')).toEqual([]);
    const missing = await harness.call('/api/project/main/instances/get', {
      id: '00000000-0000-4000-8000-000000000000',
    });
    expect(missing.status).toBe(400);

    const updated = await harness.call('/api/projects/main/update', {
      is_public: false,
      templates_repo: null,
    });
    expect(updated.status).toBe(200);
    expect(typeProblems(updated.body, 'Project', 'answer')).toEqual([]);
    const refused = await harness.call<{ detail: Array<{ msg: string }> }>('/api/projects/main/update', {
      is_public: true,
    });
    expect(refused.status).toBe(400);
    expect(refused.body.detail[0]?.msg).toMatch(/is_public/);
  });
});
