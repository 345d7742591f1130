/**
 * dstack's torchrun example (`examples/dstack/distributed-training__torchrun__.dstack.yml`) for
 * real, as far as it can run here: a `nodes: 2` task whose command is the example's torchrun
 * invocation verbatim trains a model with PyTorch's DistributedDataParallel across two emulated
 * hosts of a cluster fleet, over the emulated cluster network (gloo on CPU: no GPU, so no
 * CUDA/NCCL). What cannot run here is replaced, not faked: the training script is ours, shipped in
 * the applied directory (no GitHub clone), and PyTorch comes in the job's image, built offline from
 * this machine's wheels (no PyPI), pushed to the test's registry and pulled by each host's own
 * Docker daemon as any `image:` is.
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Run } from '@dstack/core';
import { ensureTorchTestImage, torchTestImageMissing } from '@dstack/testing/emulators';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { deleteFleet } from './cloud-run-helpers.js';
import { requireBuiltDstack, runDstack } from './dstack-cli.js';
import { ADMIN_TOKEN, type HarnessServer, makeTempDir } from './server-harness.js';
import type { VmCloudContext } from './vm-cloud-runs.js';

const EXAMPLE = fileURLToPath(
  new URL('../../../examples/dstack/distributed-training__torchrun__.dstack.yml', import.meta.url),
);
const TRAINING_SCRIPT = fileURLToPath(new URL('./torchrun-ddp/train_ddp.py', import.meta.url));
/** The example's script and its arguments, and ours in their place. */
const EXAMPLE_SCRIPT = 'multinode.py 50 10';
const STEPS = 20;
const OUR_SCRIPT = `train_ddp.py ${STEPS}`;
const NODES = 2;

const missing = torchTestImageMissing();
/** Under CI the wheels must be there: without them the test fails (the build says why) rather than skip. */
const skipped = missing !== null && process.env.CI !== 'true';

/** The example's torchrun command, verbatim but for the script it starts. */
function exampleTorchrunCommand(): string {
  const example = parse(readFileSync(EXAMPLE, 'utf8')) as { commands: string[] };
  const torchrun = example.commands.find((command) => command.includes('torchrun'));
  if (!torchrun?.includes(EXAMPLE_SCRIPT)) {
    throw new Error(`${EXAMPLE} has no torchrun command starting ${EXAMPLE_SCRIPT}`);
  }
  return torchrun.replace(EXAMPLE_SCRIPT, OUR_SCRIPT);
}

/** The last line each rank prints (train_ddp.py). */
interface RankSummary {
  rank: number;
  localRank: number;
  nodeRank: number;
  worldSize: number;
  finalLoss: number;
  allReducedLossSum: number;
  weightsSum: number;
  /** Where torchrun's rendezvous and the process group met: --master-addr. */
  masterAddress: string;
}

const SUMMARY =
  /rank=(\d+) local_rank=(\d+) node_rank=(\d+) world_size=(\d+) final_loss=([\d.]+) all_reduced_loss_sum=([\d.]+) weights_sum=(-?[\d.]+) master_addr=(\S+)/g;

function rankSummaries(logs: string): RankSummary[] {
  return [...logs.matchAll(SUMMARY)].map((match) => {
    const [rank, localRank, nodeRank, worldSize, finalLoss, allReducedLossSum, weightsSum] = match
      .slice(1, 8)
      .map(Number) as [number, number, number, number, number, number, number];
    const masterAddress = match[8] ?? '';
    return { rank, localRank, nodeRank, worldSize, finalLoss, allReducedLossSum, weightsSum, masterAddress };
  });
}

/** The losses rank `rank` printed, step by step. */
function stepLosses(logs: string, rank: number): number[] {
  return [...logs.matchAll(new RegExp(`rank=${rank} step=\\d+ loss=([\\d.]+)`, 'g'))].map((match) =>
    Number(match[1]),
  );
}

const seconds = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`;

/**
 * Waits until the run ends, and prints when each node's job entered each status, counted from
 * `since` (the apply): where the test's time goes (provisioning, the image pull, the training).
 */
async function runEndWithTimeline(harness: HarnessServer, runName: string, since: number): Promise<Run> {
  const timeline: string[] = [];
  const last = new Map<number, string>();
  const deadline = Date.now() + 900_000;
  for (;;) {
    const answer = await harness.call<Run>('/api/project/main/runs/get', { run_name: runName });
    expect(answer.status).toBe(200);
    const run = answer.body;
    for (const job of run.jobs) {
      const status = job.job_submissions.at(-1)?.status ?? 'none';
      if (last.get(job.job_spec.job_num) !== status) {
        last.set(job.job_spec.job_num, status);
        timeline.push(`node ${job.job_spec.job_num} ${status} at ${seconds(since)}`);
      }
    }
    if (['done', 'failed', 'terminated'].includes(run.status)) {
      console.info(`torchrun: ${timeline.join(', ')}; run ${run.status} at ${seconds(since)}`);
      return run;
    }
    if (Date.now() > deadline) throw new Error(`run ${runName} did not end: ${timeline.join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

export function describeTorchrunAcrossNodes(context: VmCloudContext, cloud: string): void {
  describe('dstack’s torchrun example', () => {
    const title = `trains with torchrun across ${NODES} nodes of a cluster fleet: DDP over gloo on CPU, ranks exchange tensors over the cluster network`;
    (skipped ? it.skip : it)(
      skipped ? `${title} (skipped: ${missing})` : title,
      async () => {
        const harness = context.harness();
        const runName = `${cloud}-torchrun`;
        let started = performance.now();
        const localImage = await ensureTorchTestImage();
        console.info(`torchrun: the image ${localImage} is there after ${seconds(started)}`);
        started = performance.now();
        const registry = context.defaultImages().registry;
        await registry.pushCompressed(localImage, 'team/python-torch:cpu');
        console.info(`torchrun: pushed to the test registry in ${seconds(started)}`);

        // The applied directory, as a user has it: the configuration and the training script.
        const temp = makeTempDir('dstack-torchrun-');
        try {
          const work = join(temp.dir, 'work');
          const cliConfig = join(temp.dir, 'cli');
          mkdirSync(work);
          mkdirSync(cliConfig);
          copyFileSync(TRAINING_SCRIPT, join(work, 'train_ddp.py'));
          writeFileSync(
            join(work, '.dstack.yml'),
            stringify({
              type: 'task',
              name: runName,
              nodes: NODES,
              image: `${registry.hostsAddress}/team/python-torch:cpu`,
              repos: ['.'],
              commands: [exampleTorchrunCommand()],
              // One GPU a node (a T4 offer): $DSTACK_GPUS_PER_NODE, the processes torchrun starts on each.
              resources: { gpu: 'T4' },
            }),
          );
          writeFileSync(
            join(cliConfig, 'config.yml'),
            stringify({
              projects: [{ name: 'main', url: harness.server.url, token: ADMIN_TOKEN, default: true }],
            }),
          );
          requireBuiltDstack();
          started = performance.now();
          const applied = await runDstack(['apply', '-f', '.dstack.yml', '-y', '-d'], {
            cwd: work,
            env: { DSTACK_CLI_CONFIG_DIR: cliConfig },
          });
          expect(applied.code, applied.stderr + applied.stdout).toBe(0);

          const finished = await runEndWithTimeline(harness, runName, started);
          const jobs = finished.jobs.map((job) => {
            const submission = job.job_submissions.at(-1);
            if (!submission) throw new Error(`job ${job.job_spec.job_num} has no submission`);
            return { jobNum: job.job_spec.job_num, submission };
          });
          const logsOfJobs = await Promise.all(
            jobs.map(({ submission }) => harness.logs(runName, submission.id)),
          );
          expect(finished.status, `${finished.status}:\n${logsOfJobs.join('\n---\n')}`).toBe('done');
          expect(jobs.map(({ jobNum }) => jobNum)).toEqual([0, 1]);

          // Two hosts, each with its address on the cluster network; the master is node 0's.
          const nodes = jobs.map(({ submission }) => submission.job_provisioning_data);
          const addresses = nodes.map((node) => node?.internal_ip ?? '');
          expect(new Set(nodes.map((node) => node?.instance_id)).size).toBe(NODES);
          expect(new Set(addresses).size).toBe(NODES);
          // torchrun's processes on a node: $DSTACK_GPUS_PER_NODE, the offer's GPUs (one T4).
          const gpusPerNode = nodes.map((node) => node?.instance_type.resources.gpus.length);
          expect(gpusPerNode).toEqual([1, 1]);
          const processesPerNode = 1;
          const worldSize = NODES * processesPerNode;

          const ranksPrinted = jobs.flatMap(({ jobNum }, index) => {
            const logs = logsOfJobs[index] ?? '';
            const onNode = rankSummaries(logs);
            expect(onNode.length, logs).toBe(processesPerNode);
            for (const summary of onNode) {
              expect(summary.nodeRank).toBe(jobNum);
              expect(summary.worldSize).toBe(worldSize);
              expect(summary.masterAddress).toBe(addresses[0]);
            }
            return onNode.map((summary) => ({ summary, logs }));
          });
          const summaries = ranksPrinted.map(({ summary }) => summary);
          expect(summaries.map((summary) => summary.rank).sort((a, b) => a - b)).toEqual([
            ...Array(worldSize).keys(),
          ]);
          // Every rank holds the same sum, and it is the sum of every rank's own loss: each rank
          // received the others' tensors over the network.
          const [first] = summaries;
          if (!first) throw new Error('no rank printed its summary');
          const sumOfLosses = summaries.reduce((sum, summary) => sum + summary.finalLoss, 0);
          expect(first.allReducedLossSum).toBeCloseTo(sumOfLosses, 4);
          for (const { summary, logs } of ranksPrinted) {
            expect(summary.allReducedLossSum).toBe(first.allReducedLossSum);
            expect(summary.allReducedLossSum).toBeGreaterThan(summary.finalLoss);
            // DDP averaged the gradients: the replicas hold the same weights.
            expect(summary.weightsSum).toBe(first.weightsSum);
            // It trained: the rank's loss went down.
            const losses = stepLosses(logs, summary.rank);
            expect(losses.length).toBe(STEPS);
            expect(losses.at(-1)).toBeLessThan(losses[0] ?? 0);
          }
          await deleteFleet(harness, runName);
        } finally {
          temp.remove();
        }
      },
      1_500_000,
    );
  });
}
