#!/usr/bin/env python3
"""A torch MLP on Fashion-MNIST, one worker of a gossipd cluster per process.

    PYTHONPATH=build/python python3 python/examples/train.py --rank 0 --workers 2 &
    PYTHONPATH=build/python python3 python/examples/train.py --rank 1 --workers 2

or, with no --rank, started by a launcher, which names the ranks:

    PYTHONPATH=build/python python3 -m gossipd.launch --nproc_per_node 4 python/examples/train.py
    srun python3 python/examples/train.py        (deploy/slurm/gossipd-torch.sbatch)

Each worker trains on its shard and averages with the others every step
(--algo crossover, sgp, osgp or allreduce); /status on 127.0.0.1:8280+rank
(--http-port; 0: none).
"""

import argparse
import os
import sys

import torch

import gossipd.torch as gd
from gossipd.fashion_mnist import load
from gossipd.rendezvous import launched

p = argparse.ArgumentParser()
p.add_argument("--rank", type=int, help="this worker's rank (default: the launcher's)")
p.add_argument("--workers", type=int, default=2, help="with --rank: how many")
p.add_argument("--algo", default="crossover")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--port", type=int, default=7200, help="worker i listens on port + i")
p.add_argument("--http-port", type=int, default=8280, help="worker i serves /status on http-port + i")
p.add_argument("--samples", type=int, default=0, help="train on the first N samples (0: all)")
a = p.parse_args()

torch.set_num_threads(1)
torch.manual_seed(1)  # every worker starts from the same model
model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 256), torch.nn.ReLU(),
                            torch.nn.Linear(256, 10))
x, y = load("train")
if a.samples > 0:
    x, y = x[:a.samples], y[:a.samples]
launch = None if a.rank is not None else launched(os.environ)
if launch is None and a.rank is None:
    p.error("--rank is required when no launcher (gossipd.launch, torchrun, srun) started this script")
rank, workers = (a.rank, a.workers) if launch is None else (launch.rank, launch.size)
shard = torch.arange(rank, len(y), workers)
batches = len(shard) // 64
flags = {"algo": a.algo, "steps_per_epoch": batches}
if a.http_port:
    flags["http"] = f"127.0.0.1:{a.http_port + rank}"
if launch is None:  # ranks and endpoints named here; under a launcher, its rendezvous
    flags["peers"] = {f"w{i}": f"tcp://127.0.0.1:{a.port + i}" for i in range(workers)}
    flags.update(id=f"w{rank}", listen=flags["peers"][f"w{rank}"])

with gd.Worker(**flags) as w:
    opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9), model, w)
    w.sync_state(model, opt)
    for epoch in range(a.epochs):
        order = shard[torch.randperm(len(shard), generator=torch.Generator().manual_seed(epoch))]
        for b in range(batches):
            idx = order[b * 64:(b + 1) * 64]
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
        tx, ty = load("test")
        with torch.no_grad():
            acc = (model(tx).argmax(1) == ty).float().mean().item()
        # One write a line: the workers of a launcher share its stdout, and
        # print() writes the newline apart when Python runs unbuffered.
        sys.stdout.write(f"[{w.id}] epoch {epoch + 1}/{a.epochs}  round {w.round()}  test_acc {acc:.4f}\n")
        sys.stdout.flush()
