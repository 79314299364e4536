"""Two members in threads of this process against the serial torch run of the
same seed: AllReduce-SGD is serial SGD on the whole batch; with two members
Crossover-SGD's swap and SGP's push to the one other member both average the
two models every step, which for plain SGD is serial SGD again. At the end,
members that cannot be trusted."""

import json
import math
import threading
import time
import urllib.request

import pytest
import torch

import gossipd.torch as gd
from conftest import batch, run_threads, small_model, static_cluster

STEPS = 6
TOLERANCE = 1e-5


def serial(momentum):
    model = small_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=momentum)
    for s in range(STEPS):
        x, y = batch(s)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def distributed(algo, momentum, closing, **flags):
    workers = static_cluster(2, algo, **flags)
    for w in workers:
        closing(w)
    finals = [None, None]
    models = [small_model(), small_model()]  # the same seed: the same start (seeded here, not racing in threads)

    def member(rank):
        model = models[rank]
        opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=momentum), model,
                                      workers[rank])
        workers[rank].sync_state(model, opt)
        for s in range(STEPS):
            x, y = batch(s)
            half = slice(rank * 8, rank * 8 + 8)  # each member its half of the serial batch
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x[half]), y[half]).backward()
            opt.step()
        finals[rank] = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).clone()

    run_threads([lambda: member(0), lambda: member(1)])
    return finals


def test_allreduce_is_serial_sgd_with_momentum(closing):
    expected = serial(momentum=0.9)
    for got in distributed("allreduce", 0.9, closing):
        assert (got - expected).abs().max().item() < TOLERANCE


def test_allreduce_with_robust_clip_and_no_attacker_is_serial_sgd_with_momentum(closing):
    # Two honest members: CenteredClip clips neither and gives their mean.
    expected = serial(momentum=0.9)
    for got in distributed("allreduce", 0.9, closing, robust="clip"):
        assert (got - expected).abs().max().item() < TOLERANCE


def test_allreduce_in_fp16_keeps_one_replica_near_serial_sgd(closing):
    # compress="fp16": the gradients' ring in IEEE half; every member decodes
    # the same bytes, so the replicas stay the same bits.
    expected = serial(momentum=0.9)
    first, second = distributed("allreduce", 0.9, closing, compress="fp16")
    assert torch.equal(first, second), "the replicas parted"
    err = (first - expected).abs().max().item()
    assert TOLERANCE < err < 2e-3, "fp16's rounding shows, and stays small"


@pytest.mark.parametrize("algo", ["crossover", "sgp"])
def test_two_member_gossip_is_serial_plain_sgd(algo, closing):
    expected = serial(momentum=0.0)
    for got in distributed(algo, 0.0, closing):
        assert (got - expected).abs().max().item() < TOLERANCE


@pytest.mark.parametrize("algo", ["crossover", "sgp"])
def test_gossip_in_fp16_is_serial_plain_sgd_within_halfs_rounding(algo, closing):
    # compress= is gossipd run's --compress: the segments travel as IEEE
    # half (error feedback carries the rounding into the next exchange).
    expected = serial(momentum=0.0)
    for got in distributed(algo, 0.0, closing, compress="fp16"):
        err = (got - expected).abs().max().item()
        assert TOLERANCE < err < 2e-3, "fp16's rounding shows, and stays small"


def test_another_python_thread_progresses_while_step_waits_for_the_exchange(closing):
    workers = static_cluster(2, "allreduce")
    for w in workers:
        closing(w)
    counted = {}
    late = 1.0  # seconds member 1 holds back its gradients: member 0's step() waits that long

    models = [small_model(), small_model()]

    def member(rank):
        model = models[rank]
        opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model, workers[rank])
        workers[rank].sync_state(model, opt)
        x, y = batch(0)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        if rank == 1:
            time.sleep(late)
            opt.step()
            return
        ticks = [0]
        done = threading.Event()

        def counter():
            while not done.is_set():
                ticks[0] += 1

        t = threading.Thread(target=counter)
        t.start()
        start = time.monotonic()
        opt.step()
        counted["seconds"] = time.monotonic() - start
        done.set()
        t.join()
        counted["ticks"] = ticks[0]

    run_threads([lambda: member(0), lambda: member(1)])
    assert counted["seconds"] > 0.5 * late
    # A Python loop counts millions of times a second; while step() held the
    # GIL it could not count at all.
    assert counted["ticks"] > 100000


def bn_model():
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 3))


def bn_members(algo, closing, dtype=torch.float32):
    """Two members of `algo` training bn_model() in `dtype` on data that
    differ (so do their local statistics): (models, workers)."""
    workers = static_cluster(2, algo)
    for w in workers:
        closing(w)
    models = [bn_model().to(dtype), bn_model().to(dtype)]

    def member(rank):
        model = models[rank]
        opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model, workers[rank])
        workers[rank].sync_state(model, opt)
        for s in range(STEPS):
            x, y = batch(s)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model((x + 3.0 * rank).to(dtype)), y).backward()
            opt.step()

    run_threads([lambda: member(0), lambda: member(1)])
    return models, workers


@pytest.mark.parametrize("algo", ["crossover", "allreduce"])
def test_batchnorms_running_statistics_are_averaged_with_the_parameters(algo, closing):
    # Two crossover members average every segment each round, the BatchNorm
    # buffers' too; AllReduce-SGD averages the buffers with the gradients:
    # after each step both hold the same running mean and variance, which
    # neither member's own batches alone would give.
    models, workers = bn_members(algo, closing)
    bns = [m[1] for m in models]
    assert torch.equal(bns[0].running_mean, bns[1].running_mean)
    assert torch.equal(bns[0].running_var, bns[1].running_var)
    for model, w in zip(models, workers):
        arena = torch.from_numpy(w.member.params())
        after_params = sum(p.numel() for p in model.parameters())
        assert model[1].running_mean.data_ptr() == arena[after_params:].data_ptr(), "a view of the arena"


@pytest.mark.parametrize("algo", ["crossover", "allreduce"])
def test_a_whole_cluster_restarted_on_its_checkpoints_trains_on_from_them(algo, tmp_path, closing):
    # Each member's checkpoint_dir (gossipd run's --checkpoint-dir) every 2
    # rounds; both closed, then started again from other seeds on the same
    # directories: they resume at the same round with the saved replicas and
    # train on as one cluster.
    def cluster(seed, steps):
        workers = static_cluster(2, algo, own=lambda i: {"checkpoint_dir": str(tmp_path / f"w{i}")},
                                 checkpoint_every=2)
        for w in workers:
            closing(w)
        models, rounds = [small_model(seed), small_model(seed)], [None, None]

        def member(rank):
            opt = gd.DistributedOptimizer(torch.optim.Adam(models[rank].parameters(), lr=0.01), models[rank],
                                          workers[rank])
            rounds[rank] = workers[rank].sync_state(models[rank], opt)
            for s in range(steps):
                x, y = batch(s)
                half = slice(rank * 8, rank * 8 + 8)
                opt.zero_grad()
                torch.nn.functional.cross_entropy(models[rank](x[half]), y[half]).backward()
                opt.step()
            workers[rank].close()

        run_threads([lambda: member(0), lambda: member(1)])
        return models, rounds, [w.round() for w in workers]

    _, first, _ = cluster(seed=1, steps=7)
    assert first == [0, 0]
    saved = [max(int(f.stem.split("-")[1]) for f in (tmp_path / f"w{i}").glob("ckpt-*.gsck")) for i in range(2)]
    models, resumed, ended = cluster(seed=2, steps=3)
    assert resumed[0] == resumed[1] == min(saved) > 0, f"both resume at the oldest newest checkpoint {saved}"
    assert ended == [resumed[0] + 3] * 2
    fresh = [p.detach() for p in small_model(2).parameters()]
    assert not torch.equal(next(models[0].parameters()).detach(), fresh[0]), "not the new seed's start"
    flats = [torch.cat([p.detach().reshape(-1) for p in m.parameters()]) for m in models]
    if algo == "allreduce":
        assert torch.equal(flats[0], flats[1]), "one replica"


# Members that cannot be trusted: gossipd run's --robust and --inject-byzantine
# are the Worker's robust= and inject_byzantine=. Four members, AllReduce-SGD,
# the last one sending its gradients x1000: with robust="clip" every honest
# member names it in its /status and the one replica stays finite.
BYZANTINE_STEPS = 14  # the defence names a member far beyond its radius in 10 steps in a row


def robust_status(worker):
    with urllib.request.urlopen(f"http://127.0.0.1:{worker.http_port}/status", timeout=5) as r:
        return json.load(r)


def test_a_scaled_attacker_is_named_by_every_honest_member_and_the_replica_stays_finite(closing):
    bad = 3
    workers = static_cluster(4, "allreduce", own=lambda k: {"inject_byzantine": "scaled"} if k == bad else {},
                             robust="clip", http="127.0.0.1:0")
    for w in workers:
        closing(w)
    finals = [None] * 4
    models = [small_model() for _ in workers]
    seen = {}

    def member(rank):
        model = models[rank]
        opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model, workers[rank])
        workers[rank].sync_state(model, opt)
        for s in range(BYZANTINE_STEPS):
            x, y = batch(100 * rank + s)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        seen[rank] = robust_status(workers[rank])  # before close: the member serves /status while it runs
        finals[rank] = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).clone()

    run_threads([lambda r=r: member(r) for r in range(4)])
    for rank in range(4):
        assert torch.equal(finals[rank], finals[0]), f"w{rank}'s replica differs"
        assert all(math.isfinite(v) for v in finals[rank].tolist())
        if rank == bad:
            continue
        named = [r["peer"] for r in seen[rank].get("robustness", []) if r.get("named")]
        assert named == [f"w{bad}"], seen[rank].get("robustness")


# An unknown defence, eviction without a defence, and label_flip (the daemon's label_flip poisons its
# own trainer's data; a host trains on its own): one line each.
@pytest.mark.parametrize("flags, message", [
    ({"algo": "allreduce", "robust": "krum"}, "--robust 'krum' is not a defence"),
    ({"algo": "crossover", "evict_byzantine": True}, "--evict-byzantine evicts the members --robust names"),
    ({"algo": "crossover", "inject_byzantine": "label_flip"}, "label_flip' poisons the daemon's own trainer's data"),
])
def test_a_robust_flag_a_hosted_member_cannot_use_is_one_line(closing, flags, message):
    w = gd.Worker(id="a", **flags)
    closing(w)
    model = small_model()
    with pytest.raises(ValueError, match=message):
        gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model, w)
