#!/usr/bin/env python3
"""deploy/slurm/ under a real Slurm cluster: munge, slurmctld and four slurmd,
each node a network namespace with a hostname of its own (slurm_cluster.py).

Asserts, in order:
  1. gossipd.sbatch trains 4 nodes to the job's end (COMPLETED, exit 0), and
     every node's final accuracy in the job's output is within 1 point of
     `gossipctl compare` run with the same flags;
  2. gossipd-join.sh adds a worker to a running job as a new job step: every
     worker it asks for the state answers, and it enters the cluster at a
     round > 0; then scancel: every node's worker (and the added one) leaves
     a checkpoint;
  3. gossipd-torch.sbatch runs python/examples/train.py under srun with no
     flag naming ranks (gossipd.torch reads srun's environment): 4 ranks train
     to the end, each final accuracy within 1 point of the same script under
     `python3 -m gossipd.launch` on one host;
  4. a node lost mid-job (its slurmd and every process on it SIGKILLed): the
     other three finish and the job ends COMPLETED with exit 0.

Usage: slurm_jobs.py GOSSIPD GOSSIPCTL SOURCE_DIR PYTHON_DIR
Skipped with one line when not root or without Slurm (as root,
deploy/install-deps.sh --deploy installs it; tests/run.sh does).
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from slurm_cluster import SlurmCluster, missing_programs

FLAGS = "--algo crossover --epochs 3 --train-limit 8192 --test-limit 2000 --hidden 32"
TORCH_ARGS = ["--algo", "allreduce", "--epochs", "2", "--samples", "4096"]  # one replica: the same either way
JOB_TIMEOUT = 180  # seconds any job is waited for


def fail(message):
    sys.exit(f"slurm_jobs: {message}")


def job_output(work, job):
    return open(os.path.join(work, f"slurm-{job}.out")).read()


def done_accuracies(text):
    """{worker: test accuracy} of gossipd run's 'done:' lines."""
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r"gossipd run: (\S+) done: round \d+ test_accuracy ([0-9.]+)", text)}


def ended(cluster, work, job, want_state):
    state, code = cluster.wait_ended(job, JOB_TIMEOUT)
    if (state, code) != (want_state, "0:0") and not (want_state == "CANCELLED" and state == want_state):
        fail(f"job {job} ended {state} {code}, not {want_state} 0:0; its output:\n{job_output(work, job)[-3000:]}")


def compare_accuracy(gossipctl, work):
    out = os.path.join(work, "compare")
    subprocess.run([gossipctl, "compare", "--algos", "crossover", "--workers", "4", "--threads", "1", "--out", out,
                    *[f for f in FLAGS.split() if f not in ("--algo", "crossover")]],
                   check=True, capture_output=True)
    return json.load(open(os.path.join(out, "summary.json")))["results"][0]["final_mean_accuracy"]


def within_a_point(what, accuracies, reference, n):
    if len(accuracies) != n:
        fail(f"{what}: {len(accuracies)} final accuracies in the job's output, not {n}: {accuracies}")
    far = {w: a for w, a in accuracies.items() if abs(a - reference) > 0.01}
    if far:
        fail(f"{what}: final accuracies more than 1 point from the reference {reference:.4f}: {far}")
    print(f"slurm_jobs: {what}: " + ", ".join(f"{w} {a:.4f}" for w, a in sorted(accuracies.items()))
          + f" against {reference:.4f}")


def train_to_the_end(cluster, work, gossipctl, env):
    job = cluster.sbatch(["--cpus-per-task=1", "deploy/slurm/gossipd.sbatch"], env)
    ended(cluster, work, job, "COMPLETED")
    within_a_point("gossipd.sbatch vs gossipctl compare", done_accuracies(job_output(work, job)),
                   compare_accuracy(gossipctl, work), 4)


def trained_an_epoch(work, job, workers):
    return all(os.path.exists(p) and os.path.getsize(p) > 0
               for p in (os.path.join(work, f"out/slurm-{job}/{w}.jsonl") for w in workers))


def entered_at(lines):
    """(worker, round) once gossipd run's line says the joiner entered."""
    for line in list(lines):
        m = re.search(r"gossipd run: (\S+) joined through \S+: enters at round (\d+)", line)
        if m:
            return m.group(1), int(m.group(2))
    return None


def join_then_scancel(cluster, work, env):
    job = cluster.sbatch(["--cpus-per-task=1", "deploy/slurm/gossipd.sbatch"],
                         dict(env, GOSSIPD_FLAGS=FLAGS.replace("--epochs 3", "--epochs 1000")))
    cluster.wait_for("every node's first epoch", lambda: trained_an_epoch(work, job, cluster.nodes), JOB_TIMEOUT)
    joiner = subprocess.Popen(["ip", "netns", "exec", cluster.ctl_ns, "deploy/slurm/gossipd-join.sh", job, "node2"],
                              cwd=work, env=cluster.env(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    lines = []

    def read():  # to the joiner's end
        for line in joiner.stdout:
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        entered = cluster.wait_for("the added worker to enter", lambda: entered_at(lines), JOB_TIMEOUT)
        before = lines[:]
        if entered[1] <= 0:
            fail(f"the worker added by gossipd-join.sh entered at round {entered[1]}, not > 0")
        # Each worker it asked answered: the endpoints the job's workers
        # advertise (listening on 0.0.0.0) are where the joiner reaches them.
        if any("got nothing from" in line for line in before):
            fail(f"a worker the added one asked for the state did not answer: {''.join(before)[-2000:]}")
        print(f"slurm_jobs: gossipd-join.sh's worker {entered[0]} entered job {job}'s cluster at round {entered[1]}")
        cluster.wait_for("the added worker's first epoch", lambda: trained_an_epoch(work, job, [entered[0]]),
                         JOB_TIMEOUT)
        cluster.client(["scancel", job])
        ended(cluster, work, job, "CANCELLED")
        joiner.wait(timeout=JOB_TIMEOUT)
        reader.join(timeout=JOB_TIMEOUT)
    finally:
        joiner.kill()
        joiner.wait()
    joined_output = "".join(lines)
    workers = [*cluster.nodes, entered[0]]
    bare = [w for w in workers if not glob.glob(os.path.join(work, f"out/slurm-{job}/checkpoints/{w}/ckpt-*"))]
    if bare:
        fail(f"after scancel, no checkpoint from {bare}; the added worker's output: {joined_output[-2000:]}; "
             f"the job's: {job_output(work, job)[-2000:]}")
    print(f"slurm_jobs: scancel: a checkpoint from every worker ({', '.join(workers)})")


def torch_job(cluster, work, source, python_dir):
    job = cluster.sbatch(["--cpus-per-task=1", "deploy/slurm/gossipd-torch.sbatch", "python/examples/train.py",
                          *TORCH_ARGS], {"PYTHON": sys.executable, "PYTHONPATH": python_dir,
                                          "OMP_NUM_THREADS": "1"})
    ended(cluster, work, job, "COMPLETED")
    under_srun = last_accuracies(job_output(work, job))
    local = subprocess.run([sys.executable, "-m", "gossipd.launch", "--nproc_per_node", "4",
                            os.path.join(source, "python/examples/train.py"), *TORCH_ARGS, "--http-port", "0"],
                           env=dict(os.environ, PYTHONPATH=python_dir, OMP_NUM_THREADS="1"),
                           capture_output=True, text=True, timeout=JOB_TIMEOUT, cwd=work)
    if local.returncode != 0:
        fail(f"train.py under gossipd.launch exited {local.returncode}: {local.stderr[-2000:]}")
    reference = sum(last_accuracies(local.stdout).values()) / 4
    within_a_point("train.py under srun vs under gossipd.launch", under_srun, reference, 4)


def last_accuracies(text, ranks=4):
    """{rank: the last epoch's test accuracy} of train.py's lines; every
    rank's last epoch must be there."""
    found = {}
    for m in re.finditer(r"\[(\S+)\] epoch (\d+)/(\d+) .*?test_acc ([0-9.]+)$", text, re.MULTILINE):
        if m.group(2) == m.group(3):
            found[m.group(1)] = float(m.group(4))
    if len(found) != ranks:
        fail(f"train.py's last epoch reported by {sorted(found)}, not by {ranks} ranks: {text[-3000:]}")
    return found


def lose_a_node(cluster, work, env):
    # 8 epochs of 32 rounds at >= 20 ms a step: node4 is lost (after the
    # first epoch) at least 4 s before the end, however fast the machine.
    job = cluster.sbatch(["--cpus-per-task=1", "deploy/slurm/gossipd.sbatch"],
                         dict(env, GOSSIPD_FLAGS=FLAGS.replace("--epochs 3", "--epochs 8")
                              + " --inject-step-delay-ms 20"))
    cluster.wait_for("every node's first epoch", lambda: trained_an_epoch(work, job, cluster.nodes), JOB_TIMEOUT)
    cluster.lose_node("node4")
    ended(cluster, work, job, "COMPLETED")
    finished = done_accuracies(job_output(work, job))
    if sorted(finished) != ["node1", "node2", "node3"]:
        fail(f"with node4 lost, the workers that finished were {sorted(finished)}, not node1..node3")
    said = [l for l in job_output(work, job).splitlines() if l.startswith("gossipd.sbatch:")]
    print(f"slurm_jobs: node4 lost mid-job: node1..node3 finished, the job ended COMPLETED 0:0 ({' '.join(said)})")


def main():
    gossipd, gossipctl, source, python_dir = (os.path.abspath(a) for a in sys.argv[1:5])
    if os.geteuid() != 0:
        print("slurm_jobs: SKIPPED: a Slurm cluster in network namespaces needs root")
        return
    missing = missing_programs()
    if missing:
        print(f"slurm_jobs: SKIPPED: no {', '.join(missing)} (as root: deploy/install-deps.sh --deploy)")
        return
    work = tempfile.mkdtemp(prefix="gossipd_slurm_")
    try:
        shutil.copytree(os.path.join(source, "deploy/slurm"), os.path.join(work, "deploy/slurm"))
        shutil.copytree(os.path.join(source, "python/examples"), os.path.join(work, "python/examples"))
        env = {"GOSSIPD": gossipd, "GOSSIPD_FLAGS": FLAGS, "OPENBLAS_NUM_THREADS": "1"}
        started = time.monotonic()
        with SlurmCluster(work) as cluster:
            for check in (lambda: train_to_the_end(cluster, work, gossipctl, env),
                          lambda: join_then_scancel(cluster, work, env),
                          lambda: torch_job(cluster, work, source, python_dir),
                          lambda: lose_a_node(cluster, work, env)):
                check()
                print(f"slurm_jobs: ... at {time.monotonic() - started:.0f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
