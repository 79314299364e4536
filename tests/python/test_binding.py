"""The torch binding on one member (a cluster of one): views of the arena,
and clear errors for what it cannot average."""

import pytest
import torch

import gossipd.torch as gd
from conftest import FAST, batch, free_ports, small_model


def alone(**flags):
    port = free_ports(1)[0]
    return gd.Worker(id="solo", listen=f"tcp://127.0.0.1:{port}", **{**FAST, **flags})


def train_steps(model, opt, steps):
    for s in range(steps):
        x, y = batch(s)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()


def momentum_member(closing):
    """A member alone, its optimizer SGD with momentum, synced: (model, worker, sgd, optimizer)."""
    model = small_model()
    w = alone()
    closing(w)
    sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt = gd.DistributedOptimizer(sgd, model, w)
    assert w.sync_state(model, opt) == 0
    return model, w, sgd, opt


def test_parameters_gradients_and_momentum_are_arena_views_after_step(closing):
    model, w, sgd, opt = momentum_member(closing)
    train_steps(model, opt, 3)
    assert w.round() == 3
    arena, grads, state = (torch.from_numpy(a) for a in (w.member.params(), w.member.grads(),
                                                         w.member.optimizer_state()))
    offset = 0
    for p in model.parameters():
        assert p.data_ptr() == arena[offset:].data_ptr()
        assert p.grad.data_ptr() == grads[offset:].data_ptr()
        assert sgd.state[p]["momentum_buffer"].data_ptr() == state[offset:].data_ptr()
        offset += p.numel()
    assert offset == arena.numel()
    # The steps changed the arena itself.
    assert not torch.equal(arena, torch.cat([q.detach().reshape(-1) for q in small_model().parameters()]))


def test_a_parameter_that_is_not_floating_point_is_a_type_error_naming_it(closing):
    model = small_model()
    model[2].bias = torch.nn.Parameter(torch.zeros(3, dtype=torch.complex64))
    w = alone()
    closing(w)
    with pytest.raises(TypeError, match=r"parameter '2\.bias' is torch\.complex64: gossipd averages floating-point"):
        gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model, w)


def test_an_optimizer_whose_state_is_not_known_is_a_type_error_naming_it(closing):
    model = small_model()
    w = alone()
    closing(w)
    with pytest.raises(TypeError, match=r"state of torch\.optim\.Adadelta cannot be kept in the arena"):
        gd.DistributedOptimizer(torch.optim.Adadelta(model.parameters()), model, w)


@pytest.fixture
def solo(closing):
    """A model on a started cluster of one, plain SGD: (model, worker, optimizer)."""
    model = small_model()
    w = alone()
    closing(w)
    opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model, w)
    w.sync_state()
    return model, w, opt


def test_a_rebound_parameter_is_a_runtime_error_naming_it(solo):
    model, _, opt = solo
    train_steps(model, opt, 1)
    model[0].bias.data = torch.zeros(16)  # what model.to() or p.data = ... does
    with pytest.raises(RuntimeError, match=r"parameter '0\.bias' was rebound"):
        train_steps(model, opt, 1)


def test_gradients_set_to_none_are_taken_back_into_the_arena(solo):
    model, w, opt = solo
    x, y = batch(0)
    opt.zero_grad(set_to_none=True)
    torch.nn.functional.cross_entropy(model(x), y).backward()
    expected = torch.cat([p.grad.reshape(-1) for p in model.parameters()]).clone()
    opt.step()
    assert torch.equal(torch.from_numpy(w.member.grads()), expected)


def test_bad_flags_are_value_errors_with_gossipds_line():
    model = small_model()
    with pytest.raises(ValueError, match="heartbeat"):
        gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model,
                                alone(heartbeat_ms=100, failure_timeout_ms=150))
    with pytest.raises(ValueError, match="not data parallel over whole replicas"):
        gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model, alone(algo="pipeline"))
    with pytest.raises(ValueError, match="no-such-flag"):
        gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model, alone(no_such_flag=3))
    with pytest.raises(ValueError, match="'zip' is not a codec"):
        gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model,
                                alone(algo="crossover", compress="zip"))
    with pytest.raises(ValueError, match="local-steps 0"):
        gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model, alone(local_steps=0))


def test_the_hosts_losses_and_evaluation_are_what_status_reports(closing):
    import json
    import urllib.request

    model = small_model()
    w = alone(http="127.0.0.1:0", steps_per_epoch=2)
    closing(w)
    opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model, w)
    w.sync_state()

    def epoch(first):  # two steps: the member takes the host's evaluation at the epoch's end
        losses = []
        for s in range(first, first + 2):
            x, y = batch(s)
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            losses.append(loss.item())
            opt.step(loss=loss, correct=4, batch=len(y))
        return losses

    def status():
        with urllib.request.urlopen(f"http://127.0.0.1:{w.http_port}/status", timeout=5) as r:
            return json.load(r)

    w.report(test_accuracy=0.75, test_loss=0.5, samples=100)
    losses = epoch(0)
    # A later evaluation is the next epoch's: /status keeps the one the
    # member took at the end of epoch 1 until epoch 2 ends.
    w.report(test_accuracy=0.25, test_loss=2.0, samples=100)
    first = status()
    assert first["epoch"] == 1
    assert first["test_accuracy"] == pytest.approx(0.75)
    assert first["test_loss"] == pytest.approx(0.5)
    assert first["loss"] == pytest.approx(sum(losses) / 2, rel=1e-6)
    epoch(2)
    second = status()
    assert second["epoch"] == 2
    assert second["test_accuracy"] == pytest.approx(0.25)
    assert second["test_loss"] == pytest.approx(2.0)


def test_a_worker_without_algo_trains_with_gossipd_runs_default_mode(closing):
    import json
    import os
    import subprocess
    import urllib.request
    from pathlib import Path

    from gossipd._gossipd import default_mode

    # The one default: what `gossipd run --help` shows for --algo.
    gossipd = os.environ.get("GOSSIPD_BIN", str(Path(__file__).resolve().parents[2] / "build/bin/gossipd"))
    shown = subprocess.run([gossipd, "run", "--help"], capture_output=True, text=True, check=True).stdout
    algo_line = next(line for line in shown.splitlines() if line.lstrip().startswith("--algo "))
    assert algo_line.rstrip().endswith(f"={default_mode()}"), algo_line

    model = small_model()
    w = alone(http="127.0.0.1:0")
    closing(w)
    assert w.algo == default_mode()
    opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model, w)
    w.sync_state()
    train_steps(model, opt, 1)
    with urllib.request.urlopen(f"http://127.0.0.1:{w.http_port}/status", timeout=5) as r:
        assert json.load(r)["algo"] == default_mode()


def test_the_distributed_optimizer_is_a_torch_optimizer_that_schedulers_drive(closing):
    model, w, sgd, opt = momentum_member(closing)
    assert isinstance(opt, torch.optim.Optimizer)
    assert opt.param_groups is sgd.param_groups and opt.state is sgd.state
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    lrs = []
    for s in range(5):
        x, y = batch(s)

        def closure(x=x, y=y):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            return loss

        assert isinstance(opt.step(closure), torch.Tensor), "step(closure) returns the closure's loss"
        scheduler.step()
        lrs.append(sgd.param_groups[0]["lr"])
    assert lrs == pytest.approx([0.1, 0.05, 0.05, 0.025, 0.025])
    assert w.round() == 5


def test_load_state_dict_copies_the_state_into_the_arena_and_a_rebound_buffer_is_refused(closing):
    import copy

    model, w, sgd, opt = momentum_member(closing)
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    train_steps(model, opt, 2)
    saved = copy.deepcopy(opt.state_dict())
    saved_buffers = [b["momentum_buffer"].clone() for b in saved["state"].values()]
    train_steps(model, opt, 2)
    scheduler.step()
    group = opt.param_groups[0]
    opt.load_state_dict(saved)
    state = torch.from_numpy(w.member.optimizer_state())
    offset = 0
    for p, b in zip(model.parameters(), saved_buffers):
        buf = sgd.state[p]["momentum_buffer"]
        assert buf.data_ptr() == state[offset:].data_ptr(), "the buffer is the arena's again"
        assert torch.equal(buf, b)
        offset += p.numel()
    assert sgd.param_groups[0]["lr"] == saved["param_groups"][0]["lr"]
    assert opt.param_groups[0] is group, "the scheduler still drives the same group dicts"
    train_steps(model, opt, 1)  # bound as before: no error
    sgd.load_state_dict(saved)  # the wrapped optimizer's own: replaces the buffers
    with pytest.raises(RuntimeError, match=r"momentum_buffer of '0\.weight' was replaced"):
        train_steps(model, opt, 1)


def test_rank_and_size_are_the_initial_members_ids_sorted_as_gossipd_ranks_them():
    peers = {"b": "tcp://127.0.0.1:1", "a": "tcp://127.0.0.1:2", "c": "tcp://127.0.0.1:3"}
    workers = [gd.Worker(id=i, listen=peers[i], peers=peers) for i in ("c", "a", "b")]
    assert [(w.rank, w.size) for w in workers] == [(2, 3), (0, 3), (1, 3)]
    sampler = torch.utils.data.DistributedSampler(range(12), num_replicas=workers[0].size, rank=workers[0].rank)
    assert len(sampler) == 4
    assert (alone().rank, alone().size) == (0, 1)
    joiner = gd.Worker(id="late", join="tcp://127.0.0.1:2")
    with pytest.raises(RuntimeError, match="joins a running cluster: it has no fixed rank"):
        joiner.rank


@pytest.mark.parametrize("make, keys", [
    (lambda ps: torch.optim.Adam(ps, lr=0.01), ["exp_avg", "exp_avg_sq"]),
    (lambda ps: torch.optim.AdamW(ps, lr=0.01, amsgrad=True), ["exp_avg", "exp_avg_sq", "max_exp_avg_sq"]),
    (lambda ps: torch.optim.RMSprop(ps, lr=0.01, momentum=0.5), ["square_avg", "momentum_buffer"]),
    (lambda ps: torch.optim.Adagrad(ps, lr=0.1, initial_accumulator_value=0.25), ["sum"]),
])
def test_every_kept_optimizers_state_is_arena_views_and_steps_as_torch_alone(closing, make, keys):
    # The same optimizer on a plain copy of the model, without gossipd: a
    # cluster of one steps exactly as it does.
    reference = small_model()
    ref_opt = make(reference.parameters())
    model = small_model()
    w = alone()
    closing(w)
    opt = gd.DistributedOptimizer(make(model.parameters()), model, w)
    w.sync_state(model, opt)
    train_steps(reference, ref_opt, 3)
    train_steps(model, opt, 3)
    for p, q in zip(model.parameters(), reference.parameters()):
        assert torch.allclose(p, q, atol=1e-6)
    state = torch.from_numpy(w.member.optimizer_state())
    n = sum(p.numel() for p in model.parameters())
    assert state.numel() == len(keys) * n, "one run of the parameters' length a state tensor"
    for k, key in enumerate(keys):
        offset = 0
        for p, q in zip(model.parameters(), reference.parameters()):
            t = opt.state[p][key]
            assert t.data_ptr() == state[k * n + offset:].data_ptr(), key
            assert torch.allclose(t, ref_opt.state[q][key], atol=1e-6), key
            offset += p.numel()


def test_a_member_restarted_on_its_checkpoint_dir_resumes_parameters_state_and_round(tmp_path):
    # checkpoint_dir is gossipd run's --checkpoint-dir: the arena (parameters,
    # the optimizer's state, the buffers) and the round, every 2 rounds here
    # and at close().
    def member(seed):
        model = small_model(seed)
        w = alone(checkpoint_dir=str(tmp_path), checkpoint_every=2)
        opt = gd.DistributedOptimizer(torch.optim.Adam(model.parameters(), lr=0.01), model, w)
        return model, w, opt, w.sync_state(model, opt)

    model, w, opt, start = member(1)
    assert start == 0
    after = []
    for s in range(5):
        x, y = batch(s)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        after.append((torch.cat([p.detach().reshape(-1) for p in model.parameters()]).clone(),
                      opt.state[next(model.parameters())]["exp_avg"].clone()))
    w.close()  # writes the last step's checkpoint
    newest = max(int(f.stem.split("-")[1]) for f in tmp_path.glob("ckpt-*.gsck"))
    assert newest == 5, "close() kept the last step done"
    model, w, opt, start = member(2)  # another start: the checkpoint replaces it
    try:
        assert start == newest, "the newest checkpoint's round"
        params, exp_avg = after[start - 1]
        assert torch.equal(torch.cat([p.detach().reshape(-1) for p in model.parameters()]), params)
        first = next(model.parameters())
        assert torch.equal(opt.state[first]["exp_avg"], exp_avg)
        assert float(opt.state[first]["step"]) == start, "torch's step count is the round's"
    finally:
        w.close()


@pytest.mark.parametrize("algo", ["crossover", "allreduce"])
def test_members_whose_models_differ_are_refused_naming_each_other(algo, closing):
    from conftest import run_threads, static_cluster

    workers = static_cluster(2, algo)
    for w in workers:
        closing(w)
    models = [small_model(), torch.nn.Sequential(torch.nn.Linear(8, 17), torch.nn.ReLU(), torch.nn.Linear(17, 3))]
    errors = [None, None]

    def member(rank):
        opt = gd.DistributedOptimizer(torch.optim.SGD(models[rank].parameters(), lr=0.1), models[rank],
                                      workers[rank])
        with pytest.raises(RuntimeError) as e:
            workers[rank].sync_state(models[rank], opt)
        errors[rank] = str(e.value)

    run_threads([lambda: member(0), lambda: member(1)])
    assert "member 'w1' trains a model of another layout: 207 parameters" in errors[0]
    assert "member 'w0' trains a model of another layout: 195 parameters" in errors[1]


def test_a_state_dict_of_another_optimizer_or_model_is_refused_and_changes_nothing(closing):
    model, w, sgd, opt = momentum_member(closing)
    train_steps(model, opt, 2)
    adam_model = small_model()
    adam = torch.optim.Adam(adam_model.parameters())
    adam_model(batch(0)[0]).sum().backward()
    adam.step()
    with pytest.raises(ValueError, match="holds 'exp_avg', which this torch.optim.SGD does not keep: it is another "
                                         "optimizer's"):
        opt.load_state_dict(adam.state_dict())
    bigger = torch.nn.Sequential(torch.nn.Linear(8, 17), torch.nn.ReLU(), torch.nn.Linear(17, 3))
    big_sgd = torch.optim.SGD(bigger.parameters(), lr=0.1, momentum=0.9)
    bigger(batch(0)[0]).sum().backward()
    big_sgd.step()
    with pytest.raises(ValueError, match=r"momentum_buffer of '0\.weight' in the state_dict holds 136 values, the "
                                         r"parameter 128: it is another model's"):
        opt.load_state_dict(big_sgd.state_dict())
    fewer = torch.optim.SGD(torch.nn.Linear(8, 3).parameters(), lr=0.1)
    with pytest.raises(ValueError, match=r"parameter groups hold \[2\] parameters, this optimizer's \[4\]"):
        opt.load_state_dict(fewer.state_dict())
    train_steps(model, opt, 1)  # still bound: the refusals changed nothing
    assert w.round() == 3
