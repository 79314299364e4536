"""Workers started as users start them: python3 -m gossipd.launch sets
torchrun's environment, and gd.Worker() with no peers meets the others
through a TCPStore at MASTER_ADDR:MASTER_PORT (processes, on loopback)."""

import json
import os
import re
import subprocess
import sys
import textwrap
import time

import pytest

import gossipd.torch as gd
from gossipd import launch as launch_module
from gossipd import rendezvous
from conftest import FAST, free_ports

SCRIPT = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, os.environ["GOSSIPD_PYTHONPATH"])
    import torch
    import gossipd.torch as gd
    RANK = os.environ.get("RANK") or os.environ["SLURM_PROCID"]  # torchrun's, or srun's
    if RANK == os.environ.get("FAIL_RANK"):
        sys.exit(3)
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    with gd.Worker(algo="allreduce", **json.loads(os.environ["FLAGS"])) as w:
        opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), model, w)
        w.sync_state(model, opt)
        g = torch.Generator().manual_seed(w.rank)
        for _ in range(3):
            x, y = torch.randn(8, 8, generator=g), torch.randint(0, 3, (8,), generator=g)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        total = sum(float(p.detach().double().sum()) for p in model.parameters())
        with open(os.path.join(os.environ["OUT_DIR"], RANK + ".json"), "w") as f:
            json.dump({"id": w.id, "rank": w.rank, "size": w.size, "env_rank": int(RANK),
                       "sum": total, "endpoint": w.endpoint, "tunables": os.environ.get("GLIBC_TUNABLES")}, f)
""")


def launcher(tmp_path, args, script=SCRIPT, netns=None, **env):
    """python3 -m gossipd.launch ARGS train.py, started (a Popen); in the
    network namespace `netns` where given."""
    path = tmp_path / "train.py"
    path.write_text(script)
    full = dict(os.environ, FLAGS=json.dumps(FAST), OUT_DIR=str(tmp_path), **env)
    full.setdefault("GOSSIPD_PYTHONPATH", sys.path[0])
    prefix = ["ip", "netns", "exec", netns] if netns else []
    return subprocess.Popen(prefix + [sys.executable, "-m", "gossipd.launch"] + args + [str(path)],
                            env=dict(full, PYTHONPATH=full["GOSSIPD_PYTHONPATH"]), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finished(proc, timeout=120):
    """(exit code, stderr) of a launcher; killed (by pid) if it hangs."""
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"the launcher hung: {err}")
    return proc.returncode, err


def launch(tmp_path, n, **env):
    r = subprocess.CompletedProcess([], 0)
    r.returncode, r.stderr = finished(launcher(tmp_path, ["--nproc_per_node", str(n)], **env))
    return r


def test_launched_workers_meet_through_torchruns_environment_and_train_as_one(tmp_path):
    # Another tunable set (the suite's own GLIBC_TUNABLES names hugetlb,
    # which the launcher would keep as it is): the launcher adds its own.
    r = launch(tmp_path, 3, GLIBC_TUNABLES="glibc.malloc.arena_max=8")
    assert r.returncode == 0, r.stderr
    lines = [json.loads((tmp_path / f"{rank}.json").read_text()) for rank in range(3)]  # each worker its file
    assert [(d["id"], d["rank"], d["size"]) for d in lines] == [("rank0", 0, 3), ("rank1", 1, 3), ("rank2", 2, 3)]
    assert all(d["rank"] == d["env_rank"] for d in lines), "gossipd's rank is the launcher's RANK"
    assert len({d["sum"] for d in lines}) == 1, "AllReduce-SGD: one replica"
    assert all(d["tunables"] == "glibc.malloc.arena_max=8:glibc.malloc.hugetlb=1" for d in lines), \
        "the user's tunables and malloc's huge pages"


def test_the_launcher_adds_huge_pages_to_the_tunables_unless_they_name_them():
    assert launch_module.huge_pages({}) == "glibc.malloc.hugetlb=1"
    assert launch_module.huge_pages({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}) == \
        "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"
    assert launch_module.huge_pages({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"}) == "glibc.malloc.hugetlb=0"


def test_a_worker_that_fails_stops_the_others_and_its_code_is_the_launchers(tmp_path):
    r = launch(tmp_path, 2, FAIL_RANK="1")  # rank 0 would wait for rank 1 at the rendezvous
    assert r.returncode == 3, r.stderr
    assert "a worker exited with 3; stopping the others" in r.stderr


JOIN_SCRIPT = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, os.environ["GOSSIPD_PYTHONPATH"])
    import torch
    import gossipd.torch as gd
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    joining = os.environ.get("GOSSIPD_JOIN") == "1"
    out = os.environ["OUT_DIR"]
    with gd.Worker(algo="crossover", **json.loads(os.environ["FLAGS"])) as w:
        opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05), model, w)
        entered = w.sync_state(model, opt)
        open(os.path.join(out, "joiner" if joining else "started" + os.environ["RANK"]), "w").close()
        g, steps = torch.Generator().manual_seed(os.getpid()), 0
        # The initial members train until the joiner has trained (bounded).
        while (steps < 3 if joining else not os.path.exists(os.path.join(out, "joined"))) and steps < 50000:
            x, y = torch.randn(8, 8, generator=g), torch.randint(0, 3, (8,), generator=g)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            steps += 1
        if joining:
            try:
                w.rank
                rank = "a rank"
            except RuntimeError as e:
                rank = str(e)
            with open(os.path.join(out, "joined.json"), "w") as f:
                json.dump({"id": w.id, "entered": entered, "rank": rank}, f)
            open(os.path.join(out, "joined"), "w").close()
""")


def wait_for_file(path, procs, timeout=60):
    """Waits (bounded) until `path` exists; fails at once when a launcher ended."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        ended = [p for p in procs if p.poll() is not None]
        assert not ended, f"a launcher ended first: {ended[0].communicate()[1]}"
        assert time.monotonic() < deadline, f"{path.name} did not appear within {timeout} s"
        time.sleep(0.05)


def assert_two_launched_ranks_are_one_replica(tmp_path):
    lines = [json.loads((tmp_path / f"{rank}.json").read_text()) for rank in range(2)]
    assert [(d["id"], d["rank"], d["size"]) for d in lines] == [("rank0", 0, 2), ("rank1", 1, 2)]
    assert lines[0]["sum"] == lines[1]["sum"], "AllReduce-SGD: one replica"
    return lines


def test_launchers_on_two_hosts_meet_at_node_0s_rendezvous(tmp_path):
    port = str(free_ports(1)[0])
    nodes = [launcher(tmp_path, ["--nnodes", "2", "--node_rank", str(r), "--nproc_per_node", "1", "--master_port",
                                 port]) for r in (1, 0)]  # node 1 first: it waits for node 0's rendezvous
    for proc in nodes:
        code, err = finished(proc)
        assert code == 0, err
    assert_two_launched_ranks_are_one_replica(tmp_path)


def test_a_worker_launched_with_join_enters_the_running_cluster(tmp_path):
    port = str(free_ports(1)[0])
    members = launcher(tmp_path, ["--nproc_per_node", "2", "--master_port", port], script=JOIN_SCRIPT)
    try:
        for rank in (0, 1):
            wait_for_file(tmp_path / f"started{rank}", [members])
        joiner = launcher(tmp_path, ["--join", "--nproc_per_node", "1", "--master_port", port], script=JOIN_SCRIPT)
        code, err = finished(joiner)
        assert code == 0, err
        code, err = finished(members)
        assert code == 0, err
    finally:
        members.kill()
    joined = json.loads((tmp_path / "joined.json").read_text())
    assert joined["entered"] > 0, "it downloaded the running cluster's round"
    assert joined["id"] not in ("rank0", "rank1")
    assert "joins a running cluster: it has no fixed rank" in joined["rank"]


def test_workers_in_a_slurm_job_step_meet_through_sruns_environment_and_train_as_one(tmp_path):
    """As `srun -n 3 python3 train.py` starts them: SLURM_PROCID, SLURM_NTASKS
    and SLURM_STEP_NODELIST, no RANK; the same script as under torchrun."""
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    port = free_ports(1)[0]
    base = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    base.setdefault("GOSSIPD_PYTHONPATH", sys.path[0])
    procs = [subprocess.Popen([sys.executable, str(path)], stderr=subprocess.PIPE, text=True,
                              env=dict(base, FLAGS=json.dumps(FAST), OUT_DIR=str(tmp_path), SLURM_PROCID=str(r),
                                       SLURM_NTASKS="3", SLURM_STEP_NODELIST="localhost", SLURM_JOB_ID="7",
                                       MASTER_PORT=str(port)))
             for r in range(3)]
    errors = [finished(p)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], errors
    lines = [json.loads((tmp_path / f"{rank}.json").read_text()) for rank in range(3)]
    assert [(d["id"], d["rank"], d["size"]) for d in lines] == [("rank0", 0, 3), ("rank1", 1, 3), ("rank2", 2, 3)]
    assert len({d["sum"] for d in lines}) == 1, "AllReduce-SGD: one replica"


def test_sruns_environment_reads_as_torchruns():
    step = {"SLURM_PROCID": "2", "SLURM_NTASKS": "4", "SLURM_STEP_NODELIST": "gpu[07-09,12],login", "SLURM_JOB_ID": "41"}
    assert rendezvous.launched(step) == rendezvous.Launch(2, 4, "gpu07", 20041)
    assert rendezvous.launched(dict(step, MASTER_PORT="29400")).port == 29400
    assert rendezvous.expand_hostlist("gpu[07-09,12],login") == ["gpu07", "gpu08", "gpu09", "gpu12", "login"]
    # torchrun started by srun: torchrun's keys win.
    assert rendezvous.launched(dict(step, RANK="0", WORLD_SIZE="8", MASTER_ADDR="h", MASTER_PORT="1")).size == 8
    for bad in ("gpu[07-09", "gpu]", "gpu[a-b]", ",login"):
        with pytest.raises(ValueError, match=f"Slurm's host list '{re.escape(bad)}' cannot be read"):
            rendezvous.launched(dict(step, SLURM_STEP_NODELIST=bad))
    with pytest.raises(ValueError, match="without SLURM_JOB_ID or MASTER_PORT"):
        rendezvous.launched({k: v for k, v in step.items() if k != "SLURM_JOB_ID"})


def test_an_explicit_cluster_inside_a_slurm_step_is_not_the_steps(monkeypatch):
    for key, value in (("SLURM_PROCID", "1"), ("SLURM_NTASKS", "2"), ("SLURM_STEP_NODELIST", "localhost"),
                       ("SLURM_JOB_ID", "5")):
        monkeypatch.setenv(key, value)
    for key in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "GOSSIPD_JOIN"):
        monkeypatch.delenv(key, raising=False)
    gd.Worker(peers={"a": "tcp://127.0.0.1:1"})  # its own peers: srun only started it


def test_a_launchers_environment_that_is_not_numbers_is_a_value_error(monkeypatch):
    monkeypatch.setenv("RANK", "one")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "29500")
    with pytest.raises(ValueError, match="the launcher's RANK is not a whole number: 'one'"):
        gd.Worker()
    monkeypatch.setenv("RANK", "2")
    with pytest.raises(ValueError, match="RANK 2 is not in 0 .. WORLD_SIZE - 1"):
        gd.Worker()


def test_an_incomplete_launchers_environment_is_a_value_error_naming_what_is_missing(monkeypatch):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    for key in ("MASTER_ADDR", "MASTER_PORT", "GOSSIPD_JOIN"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(ValueError, match="sets RANK, WORLD_SIZE but not MASTER_ADDR, MASTER_PORT"):
        gd.Worker()
    gd.Worker(peers={"a": "tcp://127.0.0.1:1"})  # an explicit cluster beside a partial one: not a launcher's


def test_keyword_arguments_that_contradict_the_launcher_are_value_errors(monkeypatch):
    for key, value in (("RANK", "1"), ("WORLD_SIZE", "2"), ("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29500")):
        monkeypatch.setenv(key, value)
    with pytest.raises(ValueError, match="got peers= and the launcher's environment .* also gives the cluster"):
        gd.Worker(peers={"a": "tcp://127.0.0.1:1"})
    with pytest.raises(ValueError, match=r"id='w1' contradicts the launcher's RANK 1: .*\('rank1'\)"):
        gd.Worker(id="w1")


class TwoHosts:
    """Two network namespaces joined by a veth pair (10.251.<pid>.1 and .2),
    deleted on exit: two hosts for the launcher's --nnodes."""

    def __init__(self):
        tag = os.getpid() % 100000
        self.names = [f"gdl{tag}a", f"gdl{tag}b"]
        self.addresses = [f"10.251.{tag % 250}.{i}" for i in (1, 2)]

    def sh(self, cmd):
        subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL)

    def __enter__(self):
        a, b = self.names
        try:
            for ns in self.names:
                self.sh(f"ip netns add {ns}")
            self.sh(f"ip link add {a}v type veth peer name {b}v && ip link set {a}v netns {a} && "
                    f"ip link set {b}v netns {b}")
            for ns, address in zip(self.names, self.addresses):
                self.sh(f"ip -n {ns} addr add {address}/24 dev {ns}v && ip -n {ns} link set {ns}v up && "
                        f"ip -n {ns} link set lo up")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        for ns in self.names:
            subprocess.run(f"ip netns del {ns} 2>/dev/null", shell=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_launchers_on_two_network_hosts_meet_and_train_as_one(tmp_path):
    # Each launcher in a namespace of its own: the workers listen on their
    # host's address toward MASTER_ADDR (node 0's), not on loopback.
    with TwoHosts() as hosts:
        port = str(free_ports(1)[0])
        nodes = []
        for r in (1, 0):
            args = ["--nnodes", "2", "--node_rank", str(r), "--nproc_per_node", "1", "--master_addr",
                    hosts.addresses[0], "--master_port", port]
            nodes.append(launcher(tmp_path, args, netns=hosts.names[r]))
        for proc in nodes:
            code, err = finished(proc)
            assert code == 0, err
    lines = assert_two_launched_ranks_are_one_replica(tmp_path)
    assert [d["endpoint"].split(":")[1] for d in lines] == ["//" + a for a in hosts.addresses]
