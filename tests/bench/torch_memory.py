#!/usr/bin/env python3
"""gossipd.torch at model size against torch DDP (gloo): resident memory
and step time per process, a ResNet-50-sized MLP (784 -> H -> H -> 10, H
5200: 31M parameters), SGD with momentum, random data, one thread a
process, launched as torchrun launches (python3 -m gossipd.launch).

  tests/bench/torch_memory.py [--procs 4] [--hidden 5200] [--steps 12] [--protos ddp,allreduce,crossover]

For each protocol: the median over the processes of the peak resident set
(ru_maxrss at the last step) and of the median step (steps after the
third), each against DDP's of the same run (issue 79: memory <= 1.15x DDP's),
and, where "local" ran first, what the protocol adds to it in bytes per
parameter. A protocol is gd.Worker's algo with keyword arguments after "+"
(torch_vs_ddp.py's: crossover+compress=int8, allreduce+local_steps=4);
"local": the same model and optimizer, no worker and no communication.

Needs the module built (build/python, or --package DIR) and python3-torch.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def train(a):
    """One worker process under the launcher."""
    import torch
    torch.set_num_threads(1)
    sys.path.insert(0, a.package)
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Linear(784, a.hidden), torch.nn.ReLU(), torch.nn.Linear(a.hidden, a.hidden),
                              torch.nn.ReLU(), torch.nn.Linear(a.hidden, 10))
    w = None
    if a.proto == "local":
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    elif a.proto == "ddp":
        import torch.distributed as dist
        dist.init_process_group("gloo")
        net = torch.nn.parallel.DistributedDataParallel(net)
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    else:
        import gossipd.torch as gd
        from torch_vs_ddp import proto_flags
        algo, flags = proto_flags(a.proto)
        w = gd.Worker(algo=algo, steps_per_epoch=a.steps, **flags)
        opt = gd.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9), net, w)
        w.sync_state(net, opt)
    g = torch.Generator().manual_seed(int(os.environ["RANK"]))
    times = []
    for _ in range(a.steps):
        x, y = torch.randn(64, 784, generator=g), torch.randint(0, 10, (64,), generator=g)
        start = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
        times.append(time.perf_counter() - start)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    params = sum(p.numel() for p in net.parameters())
    (Path(a.out_dir) / f"{os.environ['RANK']}.json").write_text(
        json.dumps({"peak_mb": peak_mb, "step_seconds": times, "params": params}))
    if w is not None:
        w.close(average=False)


def run(a, proto):
    """One protocol's P processes; their results."""
    sys.path.insert(0, a.package)
    from gossipd.local import free_ports
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": a.package}
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "gossipd.launch", "--master_port", str(free_ports(1)[0]), "--nproc_per_node",
               str(a.procs), __file__, "train", "--proto", proto, "--hidden", str(a.hidden), "--steps",
               str(a.steps), "--package", a.package, "--out-dir", tmp]
        if subprocess.run(cmd, env=env, timeout=a.timeout, check=False).returncode != 0:
            raise SystemExit(f"torch_memory: the {proto} launcher failed")
        return [json.loads((Path(tmp) / f"{r}.json").read_text()) for r in range(a.procs)]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", nargs="?", default="compare", choices=["compare", "train"])
    p.add_argument("--procs", type=int, default=4)
    p.add_argument("--hidden", type=int, default=5200)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--protos", default="ddp,allreduce,crossover")
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--package", default=str(ROOT / "build/python"))
    p.add_argument("--proto"), p.add_argument("--out-dir")  # train only
    a = p.parse_args()
    if a.what == "train":
        return train(a)
    base = floor = None
    for proto in a.protos.split(","):
        ranks = run(a, proto)
        peak = statistics.median(r["peak_mb"] for r in ranks)
        step = statistics.median(statistics.median(r["step_seconds"][3:]) for r in ranks)
        params = ranks[0]["params"]
        line = f"{proto:10s} {params / 1e6:.1f}M parameters: peak resident {peak:.0f} MB, " \
               f"median step {1000 * step:.0f} ms"
        if base:
            line += f" ({peak / base[0]:.2f}x and {step / base[1]:.2f}x ddp's)"
        if floor is not None:
            line += f", {(peak - floor) * 2**20 / params:+.1f} bytes a parameter over local"
        if proto == "ddp":
            base = (peak, step)
        if proto == "local":
            floor = peak
        print(line, flush=True)


if __name__ == "__main__":
    main()
