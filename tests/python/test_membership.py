"""A Python member is a member like a gossipd run daemon: a joiner downloads
the state and trains from it, /status lists it, a member it cannot meet is a
timeout naming it, and a script that forgets close() still exits promptly."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from pathlib import Path

import pytest
import torch

import gossipd.torch as gd
from conftest import FAST, batch, free_ports, run_threads, small_model, static_cluster, training_in_background


def flat(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).clone()


def wait_for(what, predicate, timeout=20):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


OPTIMIZERS = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=0.01),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_a_joiner_trains_from_the_downloaded_state_and_status_lists_it(closing, name):
    make = OPTIMIZERS[name]
    pa, pb = free_ports(2)
    a = gd.Worker(id="a", listen=f"tcp://127.0.0.1:{pa}", algo="crossover", http="127.0.0.1:0", **FAST)
    closing(a)
    model_a = small_model(seed=1)
    opt_a = gd.DistributedOptimizer(make(model_a.parameters()), model_a, a)
    a.sync_state()
    history = []  # A's parameters after each of its steps

    def step_a(s):
        x, y = batch(s % 7)
        opt_a.zero_grad()
        torch.nn.functional.cross_entropy(model_a(x), y).backward()
        opt_a.step()
        history.append(flat(model_a))

    with training_in_background(step_a, join_timeout=30):
        wait_for("a few steps of the first member", lambda: a.round() >= 5)
        b = gd.Worker(id="b", listen=f"tcp://127.0.0.1:{pb}", join=f"tcp://127.0.0.1:{pa}", algo="crossover",
                      **FAST)
        closing(b)
        model_b = small_model(seed=2)  # another start: the join replaces it
        start_b = flat(model_b)
        opt_b = gd.DistributedOptimizer(make(model_b.parameters()), model_b, b)
        round_b = b.sync_state(model_b, opt_b)
        assert round_b >= 5
        # The downloaded state is in B's own tensors: one of A's, not B's start.
        assert not torch.equal(flat(model_b), start_b)
        assert any(torch.equal(flat(model_b), h) for h in list(history))
        assert torch.from_numpy(b.member.optimizer_state()).abs().sum() > 0  # the state came with it
        if name == "adamw":  # and its moments are the optimizer's, its step count the round's
            p = next(model_b.parameters())
            assert opt_b.state[p]["exp_avg_sq"].abs().sum() > 0
            assert float(opt_b.state[p]["step"]) == round_b
        for s in range(5):
            x, y = batch(s)
            opt_b.zero_grad()
            torch.nn.functional.cross_entropy(model_b(x), y).backward()
            opt_b.step()
        assert b.round() == round_b + 5

        def members():
            with urllib.request.urlopen(f"http://127.0.0.1:{a.http_port}/status", timeout=5) as r:
                return json.load(r).get("members", [])

        wait_for("/status to list the Python joiner", lambda: "b" in members())


def test_peers_that_never_come_are_a_timeout_naming_them(closing):
    port, ghost = free_ports(2)
    w = gd.Worker(id="w", listen=f"tcp://127.0.0.1:{port}", peers={"ghost": f"tcp://127.0.0.1:{ghost}"},
                  **{**FAST, "startup_timeout_ms": 1500})
    closing(w)
    model = small_model()
    opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model, w)
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="ghost"):
        w.sync_state(model, opt)
    assert time.monotonic() - start >= 1.5  # at its start-up timeout, not before


FORGETFUL = textwrap.dedent("""
    import sys, torch
    sys.path.insert(0, sys.argv[1])
    import gossipd.torch as gd
    w = gd.Worker(id="forgetful", listen="tcp://127.0.0.1:" + sys.argv[2])
    model = torch.nn.Linear(4, 2)
    opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model, w)
    w.sync_state()
    for _ in range(3):
        opt.zero_grad(); model(torch.ones(2, 4)).sum().backward(); opt.step()
    import time
    print("trained", w.round(), time.time(), flush=True)
    # no close(): the atexit hook leaves the cluster
""")


def test_a_script_that_never_closes_exits_by_itself(tmp_path):
    script = tmp_path / "forgetful.py"
    script.write_text(FORGETFUL)
    package = os.environ.get("GOSSIPD_PYTHONPATH", str(Path(__file__).resolve().parents[2] / "build/python"))
    proc = subprocess.Popen([sys.executable, str(script), package, str(free_ports(1)[0])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    # It ended on its own (the atexit hook stopped the member), cleanly.
    assert proc.returncode == 0, err
    word, rounds, _ = out.split()
    assert (word, rounds) == ("trained", "3"), out


STEPPER = textwrap.dedent("""
    import sys, torch
    sys.path.insert(0, sys.argv[1])
    import gossipd.torch as gd
    peers = dict(p.split("=", 1) for p in sys.argv[2].split(","))
    w = gd.Worker(id="b", listen=peers["b"], peers=peers, algo="crossover", heartbeat_ms=50,
                  failure_timeout_ms=1000)
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05), model, w)
    w.sync_state()
    while True:
        opt.zero_grad(); model(torch.ones(4, 8)).sum().backward(); opt.step()
        if w.round() == 20:
            print("stepping", flush=True)
""")


def test_a_killed_python_member_is_evicted_and_the_other_trains_on(tmp_path, closing):
    pa, pb = free_ports(2)
    peers = {"a": f"tcp://127.0.0.1:{pa}", "b": f"tcp://127.0.0.1:{pb}"}
    script = tmp_path / "stepper.py"
    script.write_text(STEPPER)
    package = os.environ.get("GOSSIPD_PYTHONPATH", str(Path(__file__).resolve().parents[2] / "build/python"))
    proc = subprocess.Popen([sys.executable, str(script), package, ",".join(f"{k}={v}" for k, v in peers.items())],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        a = gd.Worker(id="a", listen=peers["a"], peers=peers, algo="crossover", http="127.0.0.1:0", **FAST)
        closing(a)
        model = small_model(seed=1)
        opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05), model, a)
        a.sync_state()

        def members():
            with urllib.request.urlopen(f"http://127.0.0.1:{a.http_port}/status", timeout=5) as r:
                return json.load(r).get("members", [])

        def step():
            x, y = batch(0)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

        while a.round() < 30:
            step()
        assert sorted(members()) == ["a", "b"]
        proc.kill()
        proc.wait()

        def evicted():  # else one more step (it waits at most a segment deadline for b)
            return "b" not in members() or step()

        # The eviction is the event; 60 s only guards against its never coming.
        wait_for("a to evict the killed b", evicted, timeout=60)
        before = a.round()
        for _ in range(10):
            step()
        assert a.round() == before + 10
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


PAUSED = textwrap.dedent("""
    import sys, torch
    sys.path.insert(0, sys.argv[1])
    import gossipd.torch as gd
    peers = dict(p.split("=", 1) for p in sys.argv[2].split(","))
    w = gd.Worker(id="c", listen=peers["c"], peers=peers, algo="crossover", heartbeat_ms=50,
                  failure_timeout_ms=1000, startup_timeout_ms=10000, timeout_ms=5000)
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05), model, w)
    w.sync_state()
    print("ready", flush=True)
    try:
        while True:
            opt.zero_grad(); model(torch.ones(4, 8)).sum().backward(); opt.step()
    except RuntimeError as e:
        print("ended", type(e).__name__, str(e).replace("\\n", " "), flush=True)
""")


def test_a_python_member_evicted_while_stopped_ends_with_one_line_instead_of_training_alone(tmp_path, closing):
    # c (its own process) is SIGSTOPped past the failure timeout; a and b
    # evict it. When it runs again it is cut off: its next step raises one
    # RuntimeError saying so and how to enter again; a and b train on
    # without it.
    ports = free_ports(3)
    peers = {k: f"tcp://127.0.0.1:{p}" for k, p in zip("abc", ports)}
    script = tmp_path / "paused.py"
    script.write_text(PAUSED)
    package = os.environ.get("GOSSIPD_PYTHONPATH", str(Path(__file__).resolve().parents[2] / "build/python"))
    proc = subprocess.Popen([sys.executable, str(script), package, ",".join(f"{k}={v}" for k, v in peers.items())],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    stop, errors, threads = threading.Event(), [], []
    try:
        workers = {k: gd.Worker(id=k, listen=peers[k], peers=peers, algo="crossover", http="127.0.0.1:0", **FAST)
                   for k in "ab"}
        for w in workers.values():
            closing(w)

        def train(k):
            try:
                model = small_model(seed=1)
                opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05), model, workers[k])
                workers[k].sync_state()
                while not stop.is_set():
                    x, y = batch(0)
                    opt.zero_grad()
                    torch.nn.functional.cross_entropy(model(x), y).backward()
                    opt.step()
            except BaseException as e:  # noqa: B036 (asserted below)
                errors.append(e)

        threads += [threading.Thread(target=train, args=(k,), daemon=True) for k in "ab"]
        for t in threads:
            t.start()

        def members(k="a"):
            with urllib.request.urlopen(f"http://127.0.0.1:{workers[k].http_port}/status", timeout=5) as r:
                return json.load(r).get("members", [])

        wait_for("c to train", lambda: "ready\n" in lines and workers["a"].round() >= 20, timeout=60)
        proc.send_signal(signal.SIGSTOP)
        # Both evict it before it runs again: woken between a's eviction and
        # b's, c refutes b's suspicion and b keeps it (an eviction is not
        # final at a member that has not made it yet), so c is not cut off.
        wait_for("a and b to evict the stopped c", lambda: "c" not in members("a") and "c" not in members("b"),
                 timeout=30)
        evicted_at = workers["a"].round()
        proc.send_signal(signal.SIGCONT)
        wait_for("c's one line", lambda: any(line.startswith("ended") for line in lines), timeout=30)
        ended = next(line for line in lines if line.startswith("ended"))
        print("[ measured ] c:", ended.strip())
        assert ended.startswith("ended RuntimeError"), ended
        assert "does not join again by itself" in ended and "join=" in ended, ended
        proc.wait(timeout=30)
        wait_for("a and b to train on without c", lambda: workers["a"].round() >= evicted_at + 20, timeout=30)
        assert "c" not in members()
        assert not errors, errors
    finally:
        stop.set()
        for t in threads:
            t.join(30)
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
            proc.wait()


def test_allreduce_members_stopping_a_moment_apart_leave_the_others_a_ring_at_once(closing):
    # Every script's end: hosts close one after another. The others' ring
    # follows each newer view at once instead of waiting out a barrier for
    # members that have left. That barrier waits the timeout plus the
    # failure timeout: at timeout_ms of an hour, the last two finishing
    # their step inside run_threads' 60 s guard is the re-form following the
    # views (waiting it out would fail the guard as a hang), whatever the
    # machine's speed.
    workers = static_cluster(5, "allreduce", timeout_ms=3600000)
    for w in workers:
        closing(w)
    met, after = threading.Barrier(5), {}

    def member(i):
        w, model = workers[i], small_model(seed=1)
        opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05), model, w)
        w.sync_state()

        def step():
            x, y = batch(i)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

        for _ in range(3):
            step()
        met.wait()
        if i < 3:
            time.sleep(0.4 * i)  # the point: they close a moment apart, each a view change
            w.close(average=False)
            return
        step()
        after[i] = (w.round(), flat(model))

    run_threads([lambda i=i: member(i) for i in range(5)])
    assert [after[i][0] for i in (3, 4)] == [4, 4]
    assert torch.equal(after[3][1], after[4][1])


GOSSIPD = os.environ.get("GOSSIPD_BIN", str(Path(__file__).resolve().parents[2] / "build/bin/gossipd"))


def test_a_daemons_status_lists_a_python_member_like_any_other(closing):
    # One cluster: `gossipd run` training its MLP (hidden 16) and a Python
    # member training a torch model of the same layout.
    pd, pp, ph = free_ports(3)
    peers = {"d": f"tcp://127.0.0.1:{pd}", "py": f"tcp://127.0.0.1:{pp}"}
    fast = [a for k, v in FAST.items() for a in ("--" + k.replace("_", "-"), str(v))]
    daemon = subprocess.Popen([GOSSIPD, "run", "--id", "d", "--listen", peers["d"], "--peers",
                               ",".join(f"{k}={v}" for k, v in peers.items()), "--algo", "crossover", "--model", "mlp",
                               "--hidden", "16", "--epochs", "100", "--train-limit", "2000", "--http",
                               f"127.0.0.1:{ph}"] + fast, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        w = gd.Worker(id="py", listen=peers["py"], peers=peers, algo="crossover", **FAST)
        closing(w)
        torch.manual_seed(1)
        model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 16), torch.nn.ReLU(),
                                    torch.nn.Linear(16, 10))
        opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05), model, w)
        w.sync_state()
        x, y = torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,))
        while w.round() < 10:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        with urllib.request.urlopen(f"http://127.0.0.1:{ph}/status", timeout=5) as r:
            status = json.load(r)
        assert sorted(status["members"]) == ["d", "py"]
        assert int(status["round"]) >= 9  # the daemon's rounds went on with the Python member's
    finally:
        daemon.kill()
        daemon.wait()
