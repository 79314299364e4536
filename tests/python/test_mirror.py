"""Parameters that cannot be views of the float32 arena (bfloat16, float64,
non-contiguous) are mirrored: the model keeps its tensors, the arena a
float32 copy that the protocols average, joiners download and checkpoints
hold. Members in threads of this process against the serial torch run."""

import pytest
import torch

import gossipd.torch as gd
from conftest import batch, run_threads, small_model, static_cluster
from test_binding import alone, train_steps
from test_protocols import bn_members

STEPS = 6


def flat(model):
    return torch.cat([p.detach().reshape(-1).float() for p in model.parameters()])


def serial(dtype, make_optimizer):
    model = small_model().to(dtype)
    opt = make_optimizer(model.parameters())
    for s in range(STEPS):
        x, y = batch(s)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x.to(dtype)), y).backward()
        opt.step()
    return flat(model)


def two_members(algo, dtype, make_optimizer, closing):
    """Two members, each on its half of serial()'s batches: their models."""
    workers = static_cluster(2, algo)
    for w in workers:
        closing(w)
    models = [small_model().to(dtype), small_model().to(dtype)]
    opts = [None, None]

    def member(rank):
        opts[rank] = gd.DistributedOptimizer(make_optimizer(models[rank].parameters()), models[rank], workers[rank])
        workers[rank].sync_state(models[rank], opts[rank])
        for s in range(STEPS):
            x, y = batch(s)
            half = slice(rank * 8, rank * 8 + 8)
            opts[rank].zero_grad()
            torch.nn.functional.cross_entropy(models[rank](x[half].to(dtype)), y[half]).backward()
            opts[rank].step()

    run_threads([lambda: member(0), lambda: member(1)])
    return models, opts, workers


def momentum(params):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


def test_a_bfloat16_model_under_allreduce_is_one_replica_near_serial_float32_sgd(closing):
    expected = serial(torch.float32, momentum)
    models, opts, workers = two_members("allreduce", torch.bfloat16, momentum, closing)
    assert all(p.dtype == torch.bfloat16 for m in models for p in m.parameters()), "the model keeps its type"
    assert torch.equal(flat(models[0]), flat(models[1])), "one replica"
    assert (flat(models[0]) - expected).abs().max().item() < 0.02, "bfloat16's rounding, no more"
    arena = torch.from_numpy(workers[0].member.params())
    state = torch.from_numpy(workers[0].member.optimizer_state())
    momenta = torch.cat([opts[0].state[p]["momentum_buffer"].reshape(-1).float() for p in models[0].parameters()])
    assert torch.equal(arena, flat(models[0])), "the arena holds the parameters after the step"
    assert torch.equal(state, momenta), "and the momentum"


def test_a_float64_model_under_crossover_is_serial_sgd_within_float32s_rounding(closing):
    plain = lambda params: torch.optim.SGD(params, lr=0.1)  # noqa: E731
    expected = serial(torch.float64, plain)
    models, _, _ = two_members("crossover", torch.float64, plain, closing)
    for m in models:
        assert (flat(m) - expected).abs().max().item() < 1e-5


def test_adams_state_of_a_bfloat16_model_is_mirrored_into_the_arena(closing):
    model = small_model().bfloat16()
    w = alone()
    closing(w)
    adam = torch.optim.Adam(model.parameters(), lr=0.01)
    opt = gd.DistributedOptimizer(adam, model, w)
    w.sync_state(model, opt)
    x_dtype_model = lambda x: model(x.bfloat16())  # noqa: E731
    for s in range(3):
        x, y = batch(s)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(x_dtype_model(x), y).backward()
        opt.step()
    state = torch.from_numpy(w.member.optimizer_state())
    n = state.numel() // 2
    for k, key in enumerate(("exp_avg", "exp_avg_sq")):
        want = torch.cat([adam.state[p][key].reshape(-1).float() for p in model.parameters()])
        assert want.abs().sum() > 0, "Adam stepped"
        assert torch.equal(state[k * n:k * n + want.numel()], want)
    assert all(adam.state[p]["exp_avg"].dtype == torch.bfloat16 for p in model.parameters())


def test_a_non_contiguous_parameter_is_mirrored_and_stays_the_models_tensor(closing):
    model = small_model()
    weight = torch.nn.Parameter(model[2].weight.detach().t().contiguous().t())  # the same values, transposed storage
    model[2].weight = weight
    assert not weight.is_contiguous()
    w = alone()
    closing(w)
    opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model, w)
    w.sync_state(model, opt)
    before = weight.detach().clone()
    train_steps(model, opt, 3)
    assert model[2].weight is weight and not weight.is_contiguous()
    assert not torch.equal(weight, before), "it trained"
    arena = torch.from_numpy(w.member.params())
    assert torch.equal(arena, flat(model))


@pytest.mark.parametrize("algo", ["allreduce", "crossover"])
def test_a_bfloat16_batchnorms_statistics_are_mirrored_and_averaged(algo, closing):
    models, _ = bn_members(algo, closing, torch.bfloat16)
    means = [m[1].running_mean for m in models]
    assert means[0].dtype == torch.bfloat16
    assert torch.equal(means[0], means[1]), "the members' statistics are one average"
