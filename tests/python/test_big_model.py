"""A model of ResNet-50's size (31M parameters) through every path of
gossipd.torch (issue 79): AllReduce-SGD, Crossover-SGD, SGP (its state
averaged), int8 segments, local steps, close()'s average, a checkpoint and
a joiner's download. Two members in threads, two steps each."""

import collections

import pytest
import torch

import gossipd.torch as gd
from conftest import FAST, free_ports, run_threads, static_cluster, training_in_background

HIDDEN = 5200  # 784 * 5200 + 5200 * 5200 + 5200 * 10 weights: 31.1M parameters
STEPS = 2


def big_model(seed=1):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(784, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, HIDDEN),
                               torch.nn.ReLU(), torch.nn.Linear(HIDDEN, 10))


def flat(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def step(model, opt, seed):
    g = torch.Generator().manual_seed(seed)
    x, y = torch.randn(16, 784, generator=g), torch.randint(0, 10, (16,), generator=g)
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()


# Crossover-SGD's run also takes the int8 codec and local steps (one
# exchange, after the second step): three runs, the suite's time.
@pytest.mark.parametrize("algo, flags", [
    ("allreduce", {}), ("crossover", {"compress": "int8", "local_steps": 2}), ("sgp", {}),
], ids=["allreduce", "crossover-int8-local-steps", "sgp"])
def test_31m_parameters_train_and_end_as_one_model(algo, flags, closing, tmp_path):
    checkpoints = algo == "crossover"  # one run writes them: 250 MB a member
    workers = static_cluster(2, algo, own=lambda i: {"checkpoint_dir": str(tmp_path / f"w{i}")} if checkpoints else {},
                             **flags)
    for w in workers:
        closing(w)
    models, moved = [big_model(), big_model()], [None, None]

    def member(rank):
        model = models[rank]
        opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9), model,
                                      workers[rank])
        workers[rank].sync_state(model, opt)
        start = flat(model).clone()
        for s in range(STEPS):
            step(model, opt, 10 * rank + s)
        moved[rank] = (flat(model) - start).abs().max().item()
        workers[rank].close()

    run_threads([lambda r=r: member(r) for r in range(2)], timeout=300)
    assert sum(p.numel() for p in models[0].parameters()) > 30_000_000
    assert all(m > 0 for m in moved), "both trained"
    finals = [flat(m) for m in models]
    assert torch.isfinite(finals[0]).all()
    assert torch.equal(finals[0], finals[1]), "one model at the end (AllReduce-SGD's replica, or close()'s average)"
    for i in range(2 if checkpoints else 0):
        saved = sorted(int(f.stem.split("-")[1]) for f in (tmp_path / f"w{i}").glob("ckpt-*.gsck"))
        assert saved and saved[-1] == STEPS, "close() checkpointed the last step"


def test_a_joiner_downloads_31m_parameters_and_their_momentum(closing):
    pa, pb = free_ports(2)
    a = gd.Worker(id="a", listen=f"tcp://127.0.0.1:{pa}", algo="crossover", **FAST)
    closing(a)
    model_a = big_model(seed=1)
    opt_a = gd.DistributedOptimizer(torch.optim.SGD(model_a.parameters(), lr=0.01, momentum=0.9), model_a, a)
    a.sync_state()
    history = collections.deque(maxlen=6)  # A's latest replicas

    def step_a(s):
        step(model_a, opt_a, s)
        history.append(flat(model_a).clone())

    with training_in_background(step_a):
        # It enters a few rounds ahead of A, each of A's 31M-parameter steps
        # seconds on a loaded machine: FAST's 10 s start would be a clock bound.
        b = gd.Worker(id="b", listen=f"tcp://127.0.0.1:{pb}", join=f"tcp://127.0.0.1:{pa}", algo="crossover",
                      **dict(FAST, startup_timeout_ms=120000))
        closing(b)
        model_b = big_model(seed=2)  # another start: the join replaces it
        opt_b = gd.DistributedOptimizer(torch.optim.SGD(model_b.parameters(), lr=0.01, momentum=0.9), model_b, b)
        assert b.sync_state(model_b, opt_b) > 0
        got = flat(model_b)
        assert any(torch.equal(got, h) for h in list(history)), "one of A's replicas, all 31M parameters"
        assert torch.from_numpy(b.member.optimizer_state()).abs().sum() > 0, "the momentum came with them"
        step(model_b, opt_b, 99)
