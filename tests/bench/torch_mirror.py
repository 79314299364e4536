#!/usr/bin/env python3
"""What mirroring costs (issue 56): the same CNN with BatchNorm
(torch_user_script.py's) in float32, whose parameters, gradients and
AdamW state are views of the arena, and in bfloat16, mirrored
(python/gossipd/mirror.py): each step copies the gradients into the
arena and the parameters, AdamW's two moments and the buffers into it
and back. One member alone (its round is empty), one thread, the two
types alternated rep by rep.

  tests/bench/torch_mirror.py [--steps 40] [--reps 5] [--batch 64]

Prints, per type, the median step (forward, backward, step()) and the
median of the mirror's copies alone, timed around the same calls step()
makes, and the copies against the float32 step.

Needs the module built (build/python, or --package DIR) and python3-torch.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def one_run(dtype, a):
    import torch
    import gossipd.torch as gd
    from gossipd.local import free_ports
    from torch_user_script import model

    torch.manual_seed(1)
    net = model().to(dtype)
    port = free_ports(1)[0]
    steps, copies = [], []
    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(a.batch, 1, 28, 28, generator=g).to(dtype), torch.randint(0, 10, (a.batch,), generator=g)
    with gd.Worker(id="solo", listen=f"tcp://127.0.0.1:{port}") as w:
        opt = gd.DistributedOptimizer(torch.optim.AdamW(net.parameters(), lr=0.001), net, w)
        w.sync_state(net, opt)
        for _ in range(a.steps):
            start = time.perf_counter()
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(x), y).backward()
            opt.step()
            steps.append(time.perf_counter() - start)
            start = time.perf_counter()  # the copies step() made, once more
            opt._mirror.grads_to_arena(opt._grads)
            opt._buffers.to_arena(opt._arena[opt._param_floats:])
            opt._mirror.to_arena(opt._arena, opt._state_view)
            opt._from_arena()
            copies.append(time.perf_counter() - start)
    skip = min(5, a.steps // 4)
    return statistics.median(steps[skip:]), statistics.median(copies[skip:])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--package", default=str(ROOT / "build/python"))
    a = p.parse_args()
    sys.path.insert(0, a.package)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import torch
    torch.set_num_threads(1)
    kinds = {"float32": torch.float32, "bfloat16": torch.bfloat16}
    runs = {k: [] for k in kinds}
    for rep in range(a.reps):
        for name, dtype in kinds.items():
            runs[name].append(one_run(dtype, a))
        print(f"rep {rep + 1}: " + "  ".join(f"{k} step {1000 * v[-1][0]:.2f} ms, copies {1000 * v[-1][1]:.3f} ms"
                                             for k, v in runs.items()), flush=True)
    base = statistics.median(s for s, _ in runs["float32"])
    for name, r in runs.items():
        step, copy = statistics.median(s for s, _ in r), statistics.median(c for _, c in r)
        print(f"{name:9s} median step {1000 * step:.2f} ms (min {1000 * min(s for s, _ in r):.2f})  mirror copies "
              f"{1000 * copy:.3f} ms = {100 * copy / base:.1f}% of the float32 step", flush=True)


if __name__ == "__main__":
    main()
