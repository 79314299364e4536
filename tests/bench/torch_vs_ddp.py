#!/usr/bin/env python3
"""gossipd.torch against torch DDP (gloo): the same torch CNN (gossipd's cnn:
conv 32, conv 64, dense 128) on Fashion-MNIST, the same seed, shards and
per-worker batch, one process per worker, one thread each.

  tests/bench/torch_vs_ddp.py accuracy [--procs 4] [--epochs 10]
      final mean test accuracy of each protocol and of DDP (issue 42: within
      0.5 points of DDP)
  tests/bench/torch_vs_ddp.py speed [--procs 4] [--steps 60] [--reps 5] [--optim adamw]
      median step time (forward, backward, step), the protocols and DDP
      alternated rep by rep; ratios against DDP's (SGD with momentum, or
      AdamW)
  tests/bench/torch_vs_ddp.py join [--procs 4] [--epochs 3] [--join-after 1] [--protos crossover,sgp]
      a fifth process joins after the others' first epoch: its first
      evaluation (the state it downloaded) against theirs at that epoch
  tests/bench/torch_vs_ddp.py speed --netns --rate 100mbit --procs 8 --protos ddp,crossover
      the same, each process in a network namespace of its own on a bridge,
      every link shaped with tbf (root; the namespaces are deleted at the end)

A protocol is gd.Worker's algo with keyword arguments after "+" (a bare
name is True): crossover+pace+overlap+send_buffer_kb=62. "local": the same
processes started together, never communicating (the floor of a step).

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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def cnn():
    import torch.nn as nn
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def optimizer(a, params):
    """--optim: sgd (momentum 0.9) or adamw (weight decay 0.01), at --lr."""
    import torch
    if a.optim == "adamw":
        return torch.optim.AdamW(params, lr=a.lr, weight_decay=0.01)
    return torch.optim.SGD(params, lr=a.lr, momentum=0.9)


def accuracy(model, x, y):
    import torch
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(y), 1000):
            correct += (model(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum().item()
    model.train()
    return correct / len(y)


def proto_flags(proto):
    """crossover+overlap+send_buffer_kb=62: algo crossover, overlap=True, send_buffer_kb="62"."""
    algo, *rest = proto.split("+")
    flags = dict((f.split("=", 1) + [True])[:2] for f in rest)
    return algo, flags


def make_worker(a, endpoints, steps):
    """A gossipd worker: one of the initial members, or (rank == world) the joiner."""
    import gossipd.torch as gd
    algo, flags = proto_flags(a.proto)
    if a.rank == a.world:
        return gd.Worker(id=f"w{a.rank}", listen=endpoints[a.rank], join=endpoints[0], algo=algo,
                         steps_per_epoch=steps, **flags)
    peers = {f"w{i}": e for i, e in enumerate(endpoints[:a.world])}
    return gd.Worker(id=f"w{a.rank}", listen=endpoints[a.rank], peers=peers, algo=algo, steps_per_epoch=steps,
                     **flags)


def worker(a):
    """One rank: trains, then writes {accuracy, step_seconds, evals} to a.out.
    With --join-after E, rank `world` joins after the others' epoch E."""
    import torch
    torch.set_num_threads(1)
    sys.path.insert(0, a.package)
    from gossipd.fashion_mnist import load
    x, y = load("train")
    if a.train_limit:
        x, y = x[:a.train_limit], y[:a.train_limit]
    tx, ty = load("test")
    steps = len(y) // a.world // a.batch
    torch.manual_seed(a.seed)
    model = cnn()
    sgd = optimizer(a, model.parameters())
    joiner, flag = a.rank == a.world, Path(a.out).with_name(f"{a.proto}-joined-after-epoch")
    w, evals, first = None, [], 0
    if a.proto in ("ddp", "local"):
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method=f"tcp://{a.ddp}", rank=a.rank, world_size=a.world)
        if a.proto == "local":  # no communication after a start together: the floor of the step time
            dist.barrier()
            opt = sgd
        else:
            model = torch.nn.parallel.DistributedDataParallel(model)
            opt = optimizer(a, model.parameters())
    else:
        import gossipd.torch as gd
        if joiner:
            while not flag.exists():
                time.sleep(0.1)
            first = a.join_after
        w = make_worker(a, a.endpoints.split(","), steps)
        opt = gd.DistributedOptimizer(sgd, model, w)
        w.sync_state(model, opt)
        if joiner:
            evals.append(("downloaded", w.round(), accuracy(model, tx, ty)))
    times = []
    for epoch in range(first, a.epochs):
        g = torch.Generator().manual_seed(a.seed * 1000 + epoch)  # every rank the same order: disjoint shards
        order = torch.randperm(len(y), generator=g)
        order = order[torch.randperm(len(y))[:steps * a.batch]] if joiner else order[a.rank::a.world]
        for s in range(steps if not a.steps else min(steps, a.steps)):
            idx = order[s * a.batch:(s + 1) * a.batch]
            start = time.perf_counter()
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
            times.append(time.perf_counter() - start)
        if a.join_after:
            evals.append((epoch + 1, w.round() if w else 0, accuracy(model, tx, ty)))
            if a.rank == 0 and epoch + 1 == a.join_after:
                flag.touch()
    result = {"step_seconds": times, "evals": evals}
    if not a.steps:
        result["accuracy"] = accuracy(model, tx, ty)
    Path(a.out).write_text(json.dumps(result))
    if w is not None:
        w.close()
    else:
        import torch.distributed as dist
        dist.destroy_process_group()


class Netns:
    """n namespaces on one bridge, each link shaped by tbf; deleted on exit."""

    def __init__(self):
        self.tag = str(os.getpid() % 100000)
        self.subnet = f"10.214.{os.getpid() % 250}."
        self.names, self.bridge = [], f"gdpy{self.tag}"

    def sh(self, cmd):
        subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL)

    def __enter__(self):
        return self

    def create(self, n, rate):
        self.sh(f"ip link add {self.bridge} type bridge && ip link set {self.bridge} up")
        for i in range(n):
            ns, veth = f"gdpy{self.tag}n{i}", f"gdp{self.tag}v{i}"
            self.sh(f"ip netns add {ns}")
            self.names.append(ns)
            self.sh(f"ip link add {veth} type veth peer name {veth}p && ip link set {veth}p netns {ns}")
            self.sh(f"ip -n {ns} link set {veth}p name eth0 && ip -n {ns} addr add {self.address(i)}/24 dev eth0")
            self.sh(f"ip -n {ns} link set eth0 up && ip -n {ns} link set lo up")
            self.sh(f"ip link set {veth} master {self.bridge} && ip link set {veth} up")
            tbf = f"root tbf rate {rate} burst 256kb latency 400ms"
            self.sh(f"tc qdisc add dev {veth} {tbf} && ip netns exec {ns} tc qdisc add dev eth0 {tbf}")

    def address(self, i):
        return f"{self.subnet}{i + 1}"

    def __exit__(self, *exc):
        for i, ns in enumerate(self.names):
            subprocess.run(f"ip link del gdp{self.tag}v{i} 2>/dev/null; ip netns del {ns}", shell=True)
        subprocess.run(f"ip link del {self.bridge} 2>/dev/null", shell=True)


def run_protocol(a, proto, netns, tmp):
    """All ranks of one protocol; returns their results."""
    n = a.procs + (1 if a.join_after else 0)  # the joiner is rank procs
    hosts = [netns.address(i) if netns else "127.0.0.1" for i in range(n)]
    sys.path.insert(0, a.package)
    from gossipd.local import free_ports
    ports = free_ports(n + 1)
    endpoints = ",".join(f"tcp://{h}:{p}" for h, p in zip(hosts, ports))
    procs, outs = [], []
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    if netns:
        env["GLOO_SOCKET_IFNAME"] = "eth0"  # gloo would take the address the host name resolves to
    for r in range(n):
        out = Path(tmp) / f"{proto}-{r}.json"
        outs.append(out)
        cmd = [sys.executable, __file__, "worker", "--proto", proto, "--rank", str(r), "--world", str(a.procs),
               "--endpoints", endpoints, "--ddp", f"{hosts[0]}:{ports[-1]}", "--epochs", str(a.epochs),
               "--steps", str(a.steps), "--batch", str(a.batch), "--lr", str(a.lr), "--seed", str(a.seed),
               "--train-limit", str(a.train_limit), "--join-after", str(a.join_after), "--optim", a.optim,
               "--package", a.package,
               "--out", str(out)]
        if netns:
            cmd = ["ip", "netns", "exec", netns.names[r]] + cmd
        procs.append(subprocess.Popen(cmd, env=env))
    try:
        deadline = time.monotonic() + a.timeout
        while any(p.poll() is None for p in procs):  # one failed rank ends the run
            failed = [p.returncode for p in procs if p.poll() not in (None, 0)]
            if failed or time.monotonic() > deadline:
                raise SystemExit(f"torch_vs_ddp: a {proto} rank failed (exit {failed}) or timed out")
            time.sleep(0.2)
        if any(p.returncode != 0 for p in procs):
            raise SystemExit(f"torch_vs_ddp: a {proto} rank failed")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return [json.loads(o.read_text()) for o in outs]


def report_join(a, res, proto):
    """The joiner's first evaluation (the downloaded state) against the others'
    at the epoch it joined after, and everyone's at the end."""
    others = [dict((e[0], e[2]) for e in r["evals"]) for r in res[:a.procs]]
    at_join = statistics.mean(o[a.join_after] for o in others)
    first = res[a.procs]["evals"][0]
    final = statistics.mean(r["accuracy"] for r in res[:a.procs])
    print(f"{proto:10s} joiner's first evaluation {first[2]:.4f} (round {first[1]}), the others' after epoch "
          f"{a.join_after} {at_join:.4f}: {100 * (first[2] - at_join):+.2f} points; final: joiner "
          f"{res[a.procs]['accuracy']:.4f}, the others {final:.4f}", flush=True)


def median_step(results, warmup):
    return statistics.median(t for r in results for t in r["step_seconds"][warmup:])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["accuracy", "speed", "join", "worker"])
    p.add_argument("--procs", type=int, default=4)
    p.add_argument("--protos", default="ddp,allreduce,crossover,sgp")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--steps", type=int, default=0, help="speed: steps per run")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--optim", choices=["sgd", "adamw"], default="sgd")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--train-limit", type=int, default=0)
    p.add_argument("--join-after", type=int, default=0, help="join: a fifth process joins after this epoch")
    p.add_argument("--netns", action="store_true")
    p.add_argument("--rate", default="100mbit")
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--package", default=str(ROOT / "build/python"))
    # worker only
    p.add_argument("--proto"), p.add_argument("--rank", type=int), p.add_argument("--world", type=int)
    p.add_argument("--endpoints"), p.add_argument("--ddp"), p.add_argument("--out")
    a = p.parse_args()
    if a.what == "worker":
        return worker(a)
    protos = a.protos.split(",")
    if a.what == "speed":
        a.epochs, a.steps = 1, a.steps or 60
    if a.what == "join":
        a.join_after = a.join_after or 1
        protos = [p for p in protos if p != "ddp"]  # DDP takes no joiners
    print(f"torch_vs_ddp {a.what}: {a.procs} processes, batch {a.batch} each, protocols {', '.join(protos)}"
          + (f", netns at {a.rate}" if a.netns else ", loopback"), flush=True)
    with tempfile.TemporaryDirectory() as tmp, Netns() as ns:
        if a.netns:
            ns.create(a.procs, a.rate)
        netns = ns if a.netns else None
        if a.what == "join":
            for proto in protos:
                report_join(a, run_protocol(a, proto, netns, tmp), proto)
            return
        if a.what == "accuracy":
            for proto in protos:
                start = time.monotonic()
                res = run_protocol(a, proto, netns, tmp)
                accs = [r["accuracy"] for r in res]
                print(f"{proto:10s} mean test accuracy {statistics.mean(accs):.4f} (min {min(accs):.4f}, "
                      f"max {max(accs):.4f})  median step {1000 * median_step(res, 10):.1f} ms  "
                      f"{time.monotonic() - start:.0f} s", flush=True)
            return
        medians = {proto: [] for proto in protos}
        for rep in range(a.reps):
            for proto in protos:
                medians[proto].append(median_step(run_protocol(a, proto, netns, tmp), 10))
            print(f"rep {rep + 1}: " + "  ".join(f"{k} {1000 * v[-1]:.1f} ms" for k, v in medians.items()),
                  flush=True)
        base = statistics.median(medians[protos[0]])
        for proto in protos:
            m = statistics.median(medians[proto])
            print(f"{proto:10s} median step {1000 * m:.1f} ms (min {1000 * min(medians[proto]):.1f})  "
                  f"{m / base:.2f}x {protos[0]}", flush=True)


if __name__ == "__main__":
    main()
