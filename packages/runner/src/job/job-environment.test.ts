import { RunnerSubmitBodySchema } from '@dstack/core/agent-protocol';
import { describe, expect, it } from 'vitest';
import { buildJobEnvironment } from './job-environment.js';

function environmentOf(clusterInfo: Record<string, unknown>, jobNum = 1) {
  const submission = RunnerSubmitBodySchema.parse({
    run: { id: 'run-1', run_name: 'train', project_name: 'main', user: 'admin' },
    job_spec: { job_name: 'train-0-0', job_num: jobNum, jobs_per_replica: 3, commands: ['true'], env: {} },
    job_submission: { id: 'job-1' },
    cluster_info: clusterInfo,
  });
  return buildJobEnvironment({
    baseEnv: {},
    submission,
    repoDir: '/w',
    workingDir: '/w',
    mpiHostfilePath: '/h',
  });
}

describe('the cluster variables', () => {
  it("count every node's own GPUs when the server sends them", () => {
    const env = environmentOf({
      job_ips: ['10.0.0.1', '10.0.0.2', '10.0.0.3'],
      master_job_ip: '10.0.0.1',
      gpus_per_job: 2,
      gpus_per_node: [8, 2, 2],
    });
    expect(env).toMatchObject({
      DSTACK_GPUS_NUM: '12',
      DSTACK_GPUS_PER_NODE: '2',
      DSTACK_NODES_NUM: '3',
      DSTACK_NODE_RANK: '1',
      DSTACK_MASTER_NODE_IP: '10.0.0.1',
      DSTACK_NODES_IPS: '10.0.0.1\n10.0.0.2\n10.0.0.3',
    });
  });

  it('size every node like this one without gpus_per_node (an older server)', () => {
    const env = environmentOf({ job_ips: ['a', 'b', 'c'], master_job_ip: 'a', gpus_per_job: 4 }, 0);
    expect(env.DSTACK_GPUS_NUM).toBe('12');
    expect(env.DSTACK_NODE_RANK).toBe('0');
  });
});
