"""Starts N worker processes on this host with torchrun's environment
(RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT),
as `torchrun --standalone --nproc_per_node N` does (Debian 12's torchrun,
torch 1.13 on Python 3.11, fails before it starts a worker):

    python3 -m gossipd.launch --nproc_per_node 4 train.py [its arguments]

A script that makes `gd.Worker()` with no peers runs the same under either.
The first worker that fails stops the others; the exit code is its.
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
    p.add_argument("--master_addr", "--master-addr", default="127.0.0.1",
                   help="where rank 0 serves the rendezvous (this host's loopback by default)")
    p.add_argument("--master_port", "--master-port", type=int, default=0,
                   help="its port (0: a free one)")
    p.add_argument("script")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    if a.nproc_per_node < 1:
        p.error(f"--nproc_per_node {a.nproc_per_node}: start at least one worker")
    return a


def main(argv=None):
    a = _args(sys.argv[1:] if argv is None else argv)
    port = a.master_port or free_ports(1, a.master_addr)[0]
    procs = []
    for rank in range(a.nproc_per_node):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(a.nproc_per_node),
                   LOCAL_WORLD_SIZE=str(a.nproc_per_node), MASTER_ADDR=a.master_addr, MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable, a.script] + a.script_args, env=env))
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
