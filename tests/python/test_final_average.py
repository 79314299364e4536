"""The gossip protocols under gossipd.torch: the optimizer state averaged
with the parameters, and close()'s exact average: every member
holds the same parameters, buffers and optimizer state to the bit, their
mean (issue 79); a member that never comes leaves the others their own."""

import threading

import pytest
import torch

import gossipd.torch as gd
from conftest import batch, run_threads, static_cluster

MEMBERS = 4
STEPS = 5


def flat(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()] +
                     [b.detach().reshape(-1).float() for b in model.buffers()])


def bn_model():
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 3))


def train(algo, closing, average=True, late=None, **flags):
    """MEMBERS members of `algo`, each on its own data (so their replicas
    differ), AdamW; each closes after STEPS steps (`late`: that one only
    once the others' close() returned, without the average). Returns
    (workers, models, optimizers, replicas and first exp_avg as they stood
    before close)."""
    others_closed = threading.Semaphore(0)
    workers = static_cluster(MEMBERS, algo, **flags)
    for w in workers:
        closing(w)
    models = [bn_model() for _ in range(MEMBERS)]
    opts, before = [None] * MEMBERS, [None] * MEMBERS

    def member(rank):
        model = models[rank]
        opts[rank] = opt = gd.DistributedOptimizer(torch.optim.AdamW(model.parameters(), lr=0.01), model,
                                                   workers[rank])
        workers[rank].sync_state(model, opt)
        for s in range(STEPS):
            x, y = batch(10 * rank + s)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x + rank), y).backward()
            opt.step()
        before[rank] = (flat(model).clone(), exp_avg(opt, model).clone())
        if rank == late:
            for _ in range(MEMBERS - 1):
                assert others_closed.acquire(timeout=30), "the others' close() returned"
            workers[rank].close(average=False)
            return
        workers[rank].close(average=average)
        others_closed.release()

    run_threads([lambda r=r: member(r) for r in range(MEMBERS)])
    return workers, models, opts, before


def exp_avg(opt, model):
    return opt.state[next(model.parameters())]["exp_avg"]


@pytest.mark.parametrize("algo", ["crossover", "sgp"])
def test_close_leaves_every_gossip_member_the_same_model_and_optimizer_state(algo, closing):
    workers, models, opts, before = train(algo, closing)
    assert [w.averaged_members for w in workers] == [MEMBERS] * MEMBERS
    assert not all(torch.equal(before[0][0], b[0]) for b in before[1:]), "gossip left replicas that differ"
    finals = [flat(m) for m in models]
    moments = [exp_avg(o, m) for o, m in zip(opts, models)]
    for f, mo in zip(finals[1:], moments[1:]):
        assert torch.equal(finals[0], f), "every member holds the same model, buffers included"
        assert torch.equal(moments[0], mo), "and the same optimizer state"
    if algo == "crossover":  # the model between steps is the replica (SGP's holds z before the round's mix)
        mean = torch.stack([b[0] for b in before]).mean(0)
        assert (finals[0] - mean).abs().max().item() < 1e-5, "their mean"
        assert (moments[0] - torch.stack([b[1] for b in before]).mean(0)).abs().max().item() < 1e-6


def test_close_without_average_keeps_each_replica(closing):
    workers, models, _, before = train("crossover", closing, average=False)
    assert [w.averaged_members for w in workers] == [None] * MEMBERS
    for m, b in zip(models, before):
        assert torch.equal(flat(m), b[0])


def test_a_member_that_never_comes_leaves_the_others_their_own_replicas(closing):
    # The last member, alive, closes only after the others: their
    # collective waits --timeout-ms for it, then each keeps its replica and
    # says so.
    workers, models, _, before = train("crossover", closing, late=MEMBERS - 1, timeout_ms=1500)
    assert [w.averaged_members for w in workers[:-1]] == [0] * (MEMBERS - 1)
    for m, b in zip(models, before):
        assert torch.equal(flat(m), b[0]), "its own replica, untouched"


def test_allreduce_close_takes_no_collective_its_replicas_are_one(closing):
    workers, models, _, _ = train("allreduce", closing)
    assert [w.averaged_members for w in workers] == [None] * MEMBERS
    assert all(torch.equal(flat(models[0]), flat(m)) for m in models[1:])


@pytest.mark.parametrize("average_state", [True, False])
def test_two_crossover_members_average_their_momentum_with_the_parameters_each_round(average_state, closing):
    # Two members swap and average every segment each round; with the state
    # in the parameters' segments (the gossip default) their momentum
    # buffers are averaged too and stay equal, each on its own data; kept
    # apart, each member's is its own.
    workers = static_cluster(2, "crossover")
    for w in workers:
        closing(w)
    models = [bn_model(), bn_model()]
    buffers = [None, None]

    def member(rank):
        model = models[rank]
        opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), model,
                                      workers[rank], average_state=average_state)
        workers[rank].sync_state(model, opt)
        for s in range(3):
            x, y = batch(10 * rank + s)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x + rank), y).backward()
            opt.step()
        buffers[rank] = torch.cat([opt.state[p]["momentum_buffer"].reshape(-1) for p in model.parameters()])

    run_threads([lambda r=r: member(r) for r in range(2)])
    assert torch.equal(flat(models[0]), flat(models[1]))
    assert torch.equal(buffers[0], buffers[1]) == average_state
