"""Starts N worker processes on this host with torchrun's environment
(RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT),
as `torchrun --nproc_per_node N` does (Debian 12's torchrun, torch 1.13 on
Python 3.11, fails before it starts a worker):

    python3 -m gossipd.launch --nproc_per_node 4 train.py [its arguments]

Several hosts: the same command on each with --nnodes, --node_rank and the
address and port where node 0's rank 0 serves the rendezvous:

    python3 -m gossipd.launch --nnodes 2 --node_rank 0 --nproc_per_node 4 \
        --master_addr 10.0.0.1 --master_port 29500 train.py

Later, on any host, workers that join the running cluster (no RANK: they
read the members from the same rendezvous):

    python3 -m gossipd.launch --join --nproc_per_node 1 \
        --master_addr 10.0.0.1 --master_port 29500 train.py

A script that makes `gd.Worker()` with no peers runs the same under either.
The first worker that fails stops the others; the exit code is its. The
workers get malloc's transparent huge pages (GLIBC_TUNABLES gains
glibc.malloc.hugetlb=1 unless it names that tunable already).
"""

import argparse
import os
import subprocess
import sys

from gossipd.local import free_ports


def _args(argv):
    p = argparse.ArgumentParser(prog="python3 -m gossipd.launch", description=__doc__.split("\n\n")[0])
    p.add_argument("--nproc_per_node", "--nproc-per-node", type=int, required=True,
                   help="worker processes to start on this host")
    p.add_argument("--nnodes", type=int, default=1, help="hosts that each start --nproc_per_node workers")
    p.add_argument("--node_rank", "--node-rank", type=int, default=0, help="this host's index, 0 .. nnodes - 1")
    p.add_argument("--join", action="store_true",
                   help="the workers join the running cluster whose rendezvous is at --master_addr:--master_port")
    p.add_argument("--master_addr", "--master-addr", default="127.0.0.1",
                   help="where rank 0 serves the rendezvous (this host's loopback by default)")
    p.add_argument("--master_port", "--master-port", type=int, default=0,
                   help="its port (0: a free one, on one host only)")
    p.add_argument("script")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    if a.nproc_per_node < 1:
        p.error(f"--nproc_per_node {a.nproc_per_node}: start at least one worker")
    if a.nnodes < 1 or not 0 <= a.node_rank < a.nnodes:
        p.error(f"--node_rank {a.node_rank} is not in 0 .. --nnodes - 1 ({a.nnodes - 1})")
    if (a.nnodes > 1 or a.join) and a.master_port == 0:
        p.error("--nnodes > 1 and --join need --master_port (and --master_addr): where rank 0 serves the rendezvous")
    return a


# glibc's malloc asks for transparent huge pages on the blocks it maps (a
# model-sized buffer is one): at 31M parameters a 2-member SGP run took
# 2.7x less CPU with it (python/README.md#big-models). A worker started
# with GLIBC_TUNABLES naming it keeps the user's choice.
HUGE_PAGES = "glibc.malloc.hugetlb=1"


def huge_pages(environ):
    """GLIBC_TUNABLES with malloc's transparent huge pages, unless it names them."""
    tunables = environ.get("GLIBC_TUNABLES", "")
    if "glibc.malloc.hugetlb" in tunables:
        return tunables
    return f"{tunables}:{HUGE_PAGES}" if tunables else HUGE_PAGES


def _environment(a, local, port):
    env = dict(os.environ, LOCAL_RANK=str(local), LOCAL_WORLD_SIZE=str(a.nproc_per_node), MASTER_ADDR=a.master_addr,
               MASTER_PORT=str(port), GLIBC_TUNABLES=huge_pages(os.environ))
    if a.join:
        for key in ("RANK", "WORLD_SIZE"):
            env.pop(key, None)
        return dict(env, GOSSIPD_JOIN="1")
    env.pop("GOSSIPD_JOIN", None)
    return dict(env, RANK=str(a.node_rank * a.nproc_per_node + local), WORLD_SIZE=str(a.nnodes * a.nproc_per_node))


def main(argv=None):
    a = _args(sys.argv[1:] if argv is None else argv)
    port = a.master_port or free_ports(1, a.master_addr)[0]
    procs = []
    for local in range(a.nproc_per_node):
        procs.append(subprocess.Popen([sys.executable, a.script] + a.script_args, env=_environment(a, local, port)))
    code = 0
    by_pid = {p.pid: p for p in procs}
    try:
        while by_pid:
            pid, status = os.wait()  # the next worker to end
            if by_pid.pop(pid, None) is None:
                continue
            exit_code = os.waitstatus_to_exitcode(status)
            if exit_code != 0 and code == 0:
                code = exit_code if exit_code > 0 else 128 - exit_code  # killed by a signal
                print(f"gossipd.launch: a worker exited with {exit_code}; stopping the others", file=sys.stderr)
                for q in by_pid.values():
                    q.terminate()
    except KeyboardInterrupt:
        for p in by_pid.values():
            p.terminate()
        code = 130
    return code


if __name__ == "__main__":
    sys.exit(main())
