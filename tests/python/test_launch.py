"""Workers started as users start them: python3 -m gossipd.launch sets
torchrun's environment, and gd.Worker() with no peers meets the others
through a TCPStore at MASTER_ADDR:MASTER_PORT (processes, on loopback)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import gossipd.torch as gd
from conftest import FAST

SCRIPT = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, os.environ["GOSSIPD_PYTHONPATH"])
    import torch
    import gossipd.torch as gd
    if os.environ["RANK"] == os.environ.get("FAIL_RANK"):
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
        with open(os.path.join(os.environ["OUT_DIR"], os.environ["RANK"] + ".json"), "w") as f:
            json.dump({"id": w.id, "rank": w.rank, "size": w.size, "env_rank": int(os.environ["RANK"]),
                       "sum": total}, f)
""")


def launch(tmp_path, n, **env):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    full = dict(os.environ, FLAGS=json.dumps(FAST), OUT_DIR=str(tmp_path), **env)
    full.setdefault("GOSSIPD_PYTHONPATH", sys.path[0])
    return subprocess.run([sys.executable, "-m", "gossipd.launch", "--nproc_per_node", str(n), str(script)],
                          env=dict(full, PYTHONPATH=full["GOSSIPD_PYTHONPATH"]), capture_output=True, text=True,
                          timeout=120)


def test_launched_workers_meet_through_torchruns_environment_and_train_as_one(tmp_path):
    r = launch(tmp_path, 3)
    assert r.returncode == 0, r.stderr
    lines = [json.loads((tmp_path / f"{rank}.json").read_text()) for rank in range(3)]  # each worker its file
    assert [(d["id"], d["rank"], d["size"]) for d in lines] == [("rank0", 0, 3), ("rank1", 1, 3), ("rank2", 2, 3)]
    assert all(d["rank"] == d["env_rank"] for d in lines), "gossipd's rank is the launcher's RANK"
    assert len({d["sum"] for d in lines}) == 1, "AllReduce-SGD: one replica"


def test_a_worker_that_fails_stops_the_others_and_its_code_is_the_launchers(tmp_path):
    r = launch(tmp_path, 2, FAIL_RANK="1")  # rank 0 would wait for rank 1 at the rendezvous
    assert r.returncode == 3, r.stderr
    assert "a worker exited with 3; stopping the others" in r.stderr


def test_a_launchers_environment_that_is_not_numbers_is_a_value_error(monkeypatch):
    monkeypatch.setenv("RANK", "one")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "29500")
    with pytest.raises(ValueError, match="RANK, WORLD_SIZE, MASTER_PORT are not whole numbers"):
        gd.Worker()
    monkeypatch.setenv("RANK", "2")
    with pytest.raises(ValueError, match="RANK 2 is not in 0 .. WORLD_SIZE - 1"):
        gd.Worker()
