#!/usr/bin/env python3
"""A PyTorch user's own script under gossipd.torch (issue 56): a small CNN
with BatchNorm, AdamW and a cosine schedule, its own data loop, launched
as torchrun launches (python3 -m gossipd.launch --nproc_per_node P), rank
and size from the worker for its shard. DDP (gloo) runs the same script
under the same launcher (init_process_group reads the same environment).

  tests/bench/torch_user_script.py [--procs 4] [--epochs 2] [--protos ddp,allreduce,crossover,sgp+own_state]
      [--join-after 1] [--reps 1] [--samples 60000]

For each protocol: the mean final test accuracy of the P workers against
DDP's, the median step (forward, backward, step, the scheduler's step)
against DDP's; for the gossip protocols the accuracy of the model every
member holds after close()'s exact average; and, with --join-after E, a
process started with `gossipd.launch --join` after rank 0's epoch E: its
first evaluation (the state it downloaded) against the others' at epoch E.

Needs the module built (build/python, or --package DIR) and python3-torch.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def model():
    import torch.nn as nn
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def accuracy(net, x, y):
    import torch
    net.eval()
    with torch.no_grad():
        correct = sum((net(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum().item() for i in range(0, len(y), 1000))
    net.train()
    return correct / len(y)


def train(a):
    """The user's script: one worker process under the launcher."""
    import torch
    torch.set_num_threads(1)
    sys.path.insert(0, a.package)
    from gossipd.fashion_mnist import load
    x, y = load("train")
    x, y = x[:a.samples], y[:a.samples]
    tx, ty = load("test")
    steps = len(y) // a.procs // a.batch
    torch.manual_seed(a.seed)
    net = model()
    joiner = os.environ.get("GOSSIPD_JOIN") == "1"
    w, first_round = None, 0
    if a.proto == "ddp":
        import torch.distributed as dist
        dist.init_process_group("gloo")  # env://: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
        rank, size = dist.get_rank(), dist.get_world_size()
        net = torch.nn.parallel.DistributedDataParallel(net)
        opt = torch.optim.AdamW(net.parameters(), lr=a.lr, weight_decay=0.01)
    else:
        import gossipd.torch as gd
        # sgp+own_state / sgp+average_state: the members' AdamW moments their own / averaged (else the default)
        algo, _, variant = a.proto.partition("+")
        w = gd.Worker(algo=algo, steps_per_epoch=steps)
        opt = gd.DistributedOptimizer(torch.optim.AdamW(net.parameters(), lr=a.lr, weight_decay=0.01), net, w,
                                      average_state={"own_state": False, "average_state": True}.get(variant))
        first_round = w.sync_state(net, opt)
        rank, size = (None, None) if joiner else (w.rank, w.size)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=a.epochs * steps)
    with warnings.catch_warnings():  # a joiner takes the schedule up where the cluster is (no step of its own yet)
        warnings.simplefilter("ignore")
        for _ in range(first_round):
            sched.step()
    evals, times = [], []
    if joiner:
        evals.append(("downloaded", first_round, accuracy(net, tx, ty)))
    flag = Path(a.out_dir) / "joined-after"
    for epoch in range(first_round // steps, a.epochs):
        g = torch.Generator().manual_seed(a.seed * 1000 + epoch)
        order = torch.randperm(len(y), generator=g)
        shard = order[torch.randperm(len(y))[:steps * a.batch]] if joiner else order[rank::size]
        for s in range(first_round % steps if joiner and epoch == first_round // steps else 0, steps):
            idx = shard[s * a.batch:(s + 1) * a.batch]
            start = time.perf_counter()
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(x[idx]), y[idx]).backward()
            opt.step()
            sched.step()
            times.append(time.perf_counter() - start)
        evals.append((epoch + 1, w.round() if w else 0, accuracy(net, tx, ty)))
        if rank == 0 and epoch + 1 == a.join_after and a.proto != "ddp":
            flag.touch()
    averaged = None
    if w is not None:
        w.close()  # the gossip protocols' members average exactly (AllReduce-SGD's are one model)
        averaged = (w.averaged_members, accuracy(net, tx, ty))
    name = "joiner" if joiner else os.environ["RANK"]
    (Path(a.out_dir) / f"{a.proto}-{name}.json").write_text(
        json.dumps({"evals": evals, "step_seconds": times, "averaged": averaged}))


def launcher(a, proto, tmp, port, extra):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": a.package}
    cmd = [sys.executable, "-m", "gossipd.launch", "--master_port", str(port)] + extra + [
        __file__, "train", "--proto", proto, "--procs", str(a.procs), "--epochs", str(a.epochs), "--batch",
        str(a.batch), "--samples", str(a.samples), "--lr", str(a.lr), "--seed", str(a.seed), "--join-after", str(a.join_after), "--package",
        a.package, "--out-dir", tmp]
    return subprocess.Popen(cmd, env=env)


def run(a, proto, tmp):
    """One protocol's run: the P workers (and the joiner); their results."""
    sys.path.insert(0, a.package)
    from gossipd.local import free_ports
    port = free_ports(1)[0]
    procs = [launcher(a, proto, tmp, port, ["--nproc_per_node", str(a.procs)])]
    deadline = time.monotonic() + a.timeout
    try:
        if a.join_after and proto != "ddp":
            flag = Path(tmp) / "joined-after"
            while not flag.exists():  # rank 0's epoch join_after (bounded; a failed run ends it)
                if procs[0].poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"torch_user_script: {proto} ended before its epoch {a.join_after}")
                time.sleep(0.1)
            flag.unlink()
            procs.append(launcher(a, proto, tmp, port, ["--join", "--nproc_per_node", "1"]))
        for p in procs:
            if p.wait(timeout=max(1, deadline - time.monotonic())) != 0:
                raise SystemExit(f"torch_user_script: a {proto} launcher exited {p.returncode}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    ranks = [json.loads((Path(tmp) / f"{proto}-{r}.json").read_text()) for r in range(a.procs)]
    joiner = Path(tmp) / f"{proto}-joiner.json"
    return ranks, json.loads(joiner.read_text()) if joiner.exists() else None


def report(a, proto, ranks, joiner, base):
    final = statistics.mean(r["evals"][-1][2] for r in ranks)
    step = statistics.median(t for r in ranks for t in r["step_seconds"][10:])
    line = f"{proto:10s} mean final test accuracy {final:.4f}"
    if base:
        line += f" ({100 * (final - base[0]):+.2f} points vs ddp)  median step {1000 * step:.1f} ms " \
                f"({step / base[1]:.2f}x ddp)"
    else:
        line += f"  median step {1000 * step:.1f} ms"
    if ranks[0]["averaged"] and ranks[0]["averaged"][0]:
        members, acc = ranks[0]["averaged"]
        line += f"; close()'s exact average of {members} {acc:.4f} ({100 * (acc - final):+.2f} points vs the " \
                f"replicas' mean" + (f", {100 * (acc - base[0]):+.2f} vs ddp)" if base else ")")
    if joiner:
        at = statistics.mean(e[2] for r in ranks for e in r["evals"] if e[0] == a.join_after)
        first = joiner["evals"][0]
        line += f"; joiner's first evaluation {first[2]:.4f} at round {first[1]} vs the others' " \
                f"{at:.4f} after epoch {a.join_after} ({100 * (first[2] - at):+.2f} points)"
    print(line, flush=True)
    return final, step


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", nargs="?", default="compare", choices=["compare", "train"])
    p.add_argument("--procs", type=int, default=4)
    p.add_argument("--protos", default="ddp,allreduce,crossover")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--samples", type=int, default=60000, help="the first N training samples")
    p.add_argument("--lr", type=float, default=0.002)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--join-after", type=int, default=1, help="0: no joiner")
    p.add_argument("--reps", type=int, default=1, help="runs of every protocol (seeds seed, seed + 1, ...)")
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--package", default=str(ROOT / "build/python"))
    p.add_argument("--proto"), p.add_argument("--out-dir")  # train only
    a = p.parse_args()
    if a.what == "train":
        return train(a)
    protos = a.protos.split(",")
    print(f"torch_user_script: {a.procs} processes, {a.epochs} epochs, batch {a.batch} each, AdamW lr {a.lr} "
          f"cosine, protocols {', '.join(protos)}", flush=True)
    seed = a.seed
    for rep in range(a.reps):
        a.seed = seed + rep
        base = None
        for proto in protos:
            with tempfile.TemporaryDirectory() as tmp:
                ranks, joiner = run(a, proto, tmp)
            got = report(a, proto, ranks, joiner, base)
            if proto == "ddp":
                base = got


if __name__ == "__main__":
    main()
