"""Shared helpers of the Python module's tests: free loopback ports, a small
model, members in threads of this process (each step() releases the GIL)."""

import contextlib
import os
import sys
import threading
from pathlib import Path

import pytest
import torch

# The package from the build tree (tests/CMakeLists.txt sets GOSSIPD_PYTHONPATH).
sys.path.insert(0, os.environ.get("GOSSIPD_PYTHONPATH", str(Path(__file__).resolve().parents[2] / "build/python")))

import gossipd.torch as gd  # noqa: E402
from gossipd.local import free_ports  # noqa: E402,F401 (the tests import it from here)


def small_model(seed=1):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))


def batch(seed, n=16):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 8, generator=g), torch.randint(0, 3, (n,), generator=g)


# Quick failure detection and start-up for tests on loopback.
FAST = dict(heartbeat_ms=50, failure_timeout_ms=1000, startup_timeout_ms=10000, timeout_ms=5000)


def static_cluster(n, algo, own=None, **flags):
    """n workers with static peers on loopback (not started: each starts
    when its optimizer is made); own(i), where given, adds worker i's own
    flags."""
    ids = [f"w{i}" for i in range(n)]
    ports = free_ports(n)
    peers = {i: f"tcp://127.0.0.1:{p}" for i, p in zip(ids, ports)}
    return [gd.Worker(id=w, listen=peers[w], peers=peers, algo=algo, **{**FAST, **flags, **(own(k) if own else {})})
            for k, w in enumerate(ids)]


def run_threads(fns, timeout=60):
    """Runs each fn in a thread; re-raises the first error; fails on a hang."""
    errors, threads = [], []
    for fn in fns:
        def body(fn=fn):
            try:
                fn()
            except BaseException as e:  # noqa: B036 (re-raised below)
                errors.append(e)
        threads.append(threading.Thread(target=body, daemon=True))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a worker thread hung"
    if errors:
        raise errors[0]


@contextlib.contextmanager
def training_in_background(step, join_timeout=60):
    """Calls step(0), step(1), ... on a thread of its own while the block
    runs; re-raises the thread's error after it."""
    stop, errors = threading.Event(), []

    def body():
        try:
            s = 0
            while not stop.is_set():
                step(s)
                s += 1
        except BaseException as e:  # noqa: B036 (re-raised below)
            errors.append(e)

    t = threading.Thread(target=body, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join(join_timeout)
    assert not errors, errors


@pytest.fixture
def closing():
    """Workers registered here are closed at the test's end, also on failure."""
    workers = []
    yield workers.append
    for w in workers:
        w.close(average=False)  # a test's end: its members are not at one step
