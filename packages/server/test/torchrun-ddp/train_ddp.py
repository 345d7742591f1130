"""A tiny data-parallel training on CPU with the gloo backend, started by torchrun on every node.

Each rank trains the same linear model (DistributedDataParallel averages the gradients across
ranks at every backward pass) on data of its own, then all-reduces its final loss: the sum is the
same on every rank only if the ranks really exchanged tensors. Usage: train_ddp.py STEPS
"""

import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    steps = int(sys.argv[1])
    dist.init_process_group(backend="gloo")
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    # The same initial weights everywhere (DDP would broadcast rank 0's anyway); data per rank.
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(1000 + rank)
    inputs = torch.randn(64, 8, generator=data)
    targets = inputs.sum(dim=1, keepdim=True) + 0.1 * torch.randn(64, 1, generator=data)

    for step in range(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
        print(f"rank={rank} step={step} loss={loss.item():.6f}", flush=True)

    final_loss = torch.nn.functional.mse_loss(model(inputs), targets).detach()
    reduced = final_loss.clone()
    dist.all_reduce(reduced, op=dist.ReduceOp.SUM)
    weights = sum(parameter.detach().sum() for parameter in model.parameters()).item()
    print(
        f"rank={rank} local_rank={os.environ['LOCAL_RANK']} node_rank={os.environ['GROUP_RANK']} "
        f"world_size={world_size} final_loss={final_loss.item():.6f} "
        f"all_reduced_loss_sum={reduced.item():.6f} weights_sum={weights:.6f} "
        f"master_addr={os.environ['MASTER_ADDR']}",
        flush=True,
    )
    # Every rank done before any tears its connections down: without this, a rank still closing
    # its gloo pairs after its peer's process exited aborted once ("terminate called without an
    # active exception", SIGABRT) after training had succeeded on both nodes.
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
