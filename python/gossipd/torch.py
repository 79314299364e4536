"""PyTorch glue: a gossipd member that averages a torch model's parameters.

    import gossipd.torch as gd
    with gd.Worker(id="w0", listen="tcp://127.0.0.1:7000",
                   peers={"w1": "tcp://127.0.0.1:7001"}, algo="crossover") as w:
        opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05), model, w)
        w.sync_state(model, opt)
        for x, y in loader:
            opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()

The parameters (and their gradients and the optimizer's state) are views of
one flat float32 arena the C++ member owns, so a round reads and writes them
in place (other types are mirrored: mirror.py); step() waits for the member
with the GIL released.
"""

import torch

from gossipd._gossipd import host_averages_state
from gossipd.buffers import Buffers
from gossipd.layout import ArenaLayout
from gossipd.mirror import ParamMirror, viewable
from gossipd.optim_state import initial_state, set_steps, state_keys
from gossipd.worker import Worker

__all__ = ["Worker", "DistributedOptimizer"]


def _check_tensor(name, p):
    if not p.is_floating_point():
        raise TypeError(f"gossipd: parameter '{name}' is {p.dtype}: gossipd averages floating-point parameters "
                        "(float32 in place; bfloat16, float16 and float64 mirrored)")


class DistributedOptimizer(torch.optim.Optimizer):
    """Wraps a torch optimizer (SGD, Adam, AdamW, RMSprop, Adagrad): step()
    takes the local step, then one round of the worker's protocol
    (AllReduce-SGD averages the gradients before the local step instead).
    The model's parameters, gradients and the optimizer's state tensors
    (momentum buffers, Adam's moments, ...) become views of the worker's
    arena, so a joiner downloads the state and a checkpoint holds it
    (those of other types than float32 on the CPU are mirrored: mirror.py).

    `average_state` (default: on for SGP and OSGP, off for Crossover-SGD,
    as measured): the state tensors travel with the parameters, each
    module's in its segment (layout.py), so a round averages the moments as
    it averages the parameters; off, each member's state is its own.
    AllReduce-SGD's members hold one state already.

    It is a torch.optim.Optimizer whose param_groups and state are the
    wrapped optimizer's own (not copies), so torch's learning-rate
    schedulers drive it as they drive the optimizer it wraps."""

    def __init__(self, optimizer, model, worker, average_state=None):  # pylint: disable=super-init-not-called
        # torch's Optimizer.__init__ would copy the groups: they are shared instead.
        self._keys = state_keys(optimizer)  # a TypeError for one whose state is not known
        self.optimizer = optimizer
        self.model = model
        self.worker = worker
        self._params = list(model.named_parameters())
        if not self._params:
            raise ValueError("gossipd: the model has no parameters")
        for name, p in self._params:
            _check_tensor(name, p)
        in_optimizer = {id(p) for g in optimizer.param_groups for p in g["params"]}
        missing = [n for n, p in self._params if id(p) not in in_optimizer]
        if missing:
            raise ValueError(f"gossipd: parameter '{missing[0]}' is not in the optimizer: give it all of "
                             "model.parameters()")
        self._buffers = Buffers(model)
        params = [p for _, p in self._params]
        # Where it measured better the state travels with the parameters (layout.py): the mode says.
        self._layout = ArenaLayout(self._params, self._keys, average_state if average_state is not None else
                                   host_averages_state(worker.algo))
        self._param_floats = self._layout.param_floats  # where the buffers begin
        initial = self._layout.initial(optimizer, self._buffers.flat())
        segments = self._layout.segments + self._buffers.segments()
        if self._layout.gossiped_state:
            member = worker._start(segments, initial.numpy(), 0, None)  # no state apart
        else:
            start = initial_state(optimizer, params, self._keys, self._buffers.floats)
            member = worker._start(segments, initial.numpy(), max(1, len(self._keys)),
                                   None if start is None else start.numpy())
        self._arena = torch.from_numpy(member.params())
        # A mode whose members hold the one model (AllReduce-SGD) averages the
        # buffers with the gradients (their run of the gradients' arena).
        self._average_buffers = member.one_replica() and self._buffers.floats > 0
        self._grads = torch.from_numpy(member.grads())
        self._state = torch.from_numpy(member.optimizer_state())
        self._mirror = ParamMirror(list(self._slices()), optimizer, self._keys)
        self._bind()
        worker._after_average = self._from_arena  # close()'s average, into the mirrored tensors and buffers

    # torch.optim.Optimizer's fields, the wrapped optimizer's.
    @property
    def defaults(self):
        return self.optimizer.defaults

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    @property
    def state(self):
        return self.optimizer.state

    def __repr__(self):
        return f"gossipd.torch.DistributedOptimizer({self.optimizer!r})"

    def add_param_group(self, param_group):
        raise ValueError("gossipd: the arena is laid out when the optimizer is made; give every parameter "
                         "to the optimizer before wrapping it")

    def _slices(self, bound_only=False):
        for name, p, s in self._layout.entries:
            if not bound_only or viewable(p):
                yield name, p, s

    def _state_view(self, k, s):
        """The arena's run of state key k for the parameter at slice s."""
        return self._layout.state_view(self._arena, self._state, k, s)

    def _bind(self):
        with torch.no_grad():
            for _, p, s in self._slices(bound_only=True):
                p.data = self._arena[s].view_as(p)
                p.grad = self._grads[s].view_as(p)
                for k, key in enumerate(self._keys):
                    self.optimizer.state[p][key] = self._state_view(k, s).view_as(p)
            self._mirror.start_state(self._state_view)
            self._buffers.bind(self._arena[self._param_floats:self._param_floats + self._buffers.floats])
        set_steps(self.optimizer, [p for _, p in self._params], 0, only_missing=True)

    def _from_arena(self):
        """The arena into the tensors that are not its views (after a join's
        download or a checkpoint's resume, and after each round)."""
        self._mirror.from_arena(self._arena, self._state_view)
        self._buffers.from_arena(self._arena[self._param_floats:self._param_floats + self._buffers.floats])

    def _resumed_at(self, round):
        """The state came with a join's download or from a checkpoint:
        torch's step counts (Adam's bias correction) are the round's."""
        set_steps(self.optimizer, [p for _, p in self._params], round)

    def _check_bindings(self):
        self._buffers.check(self._arena[self._param_floats:self._param_floats + self._buffers.floats])
        for name, p, s in self._slices(bound_only=True):
            if p.data_ptr() != self._arena[s].data_ptr():
                raise RuntimeError(
                    f"gossipd: parameter '{name}' was rebound after the optimizer was made (model.to(), "
                    "load_state_dict(assign) or p.data = ...): its updates would never be averaged; "
                    "copy values in place (p.data.copy_(...)) instead")
            for k, key in enumerate(self._keys):
                buf = self.optimizer.state.get(p, {}).get(key)
                if buf is None or buf.data_ptr() != self._state_view(k, s).data_ptr():
                    raise RuntimeError(
                        f"gossipd: the optimizer's {key} of '{name}' was replaced after the optimizer was made "
                        "(the wrapped optimizer's load_state_dict, or state[p] = ...): joiners and checkpoints "
                        "would see the old one; load state through the DistributedOptimizer's "
                        "load_state_dict, which copies it in place")

    def _bind_grads(self):
        # zero_grad(set_to_none=True) or a user's own tensor: back into the arena (one copy).
        for _, p, s in self._slices(bound_only=True):
            target = self._grads[s]
            if p.grad is None:
                target.zero_()
                p.grad = target.view_as(p)
            elif p.grad.data_ptr() != target.data_ptr():
                target.copy_(p.grad.reshape(-1))
                p.grad = target.view_as(p)
        self._mirror.grads_to_arena(self._grads)

    def zero_grad(self, set_to_none=False):
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def step(self, closure=None, *, loss=None, correct=0, batch=0):
        """The local step and one round of the protocol, as torch's
        step(closure): a closure's loss is returned. `loss` (a tensor or a
        float; else the closure's), `correct` and `batch`, where given, go
        into the member's per-epoch figures (/status, --metrics-out)."""
        closure_loss = None
        if closure is not None:
            with torch.enable_grad():
                closure_loss = closure()
        if loss is None:
            loss = closure_loss
        self._check_bindings()
        self._bind_grads()
        buffers = self._arena[self._param_floats:self._param_floats + self._buffers.floats]
        self._buffers.to_arena(buffers)
        if self._average_buffers:
            self._grads[self._param_floats:self._param_floats + self._buffers.floats].copy_(buffers)
        member = self.worker.member
        loss = float(loss) if loss is not None else 0.0
        member.begin_step(loss, int(correct), int(batch) if batch else (1 if loss else 0))
        if self._average_buffers:  # the member averaged them with the gradients
            buffers.copy_(self._grads[self._param_floats:self._param_floats + self._buffers.floats])
        self._mirror.grads_from_arena(self._grads)
        self.optimizer.step()
        self._mirror.to_arena(self._arena, self._state_view)
        member.end_step()
        self._from_arena()
        return closure_loss

    def state_dict(self):
        return self.optimizer.state_dict()

    def _check_state_dict(self, state_dict):
        """ValueError where `state_dict` is another model's or optimizer's
        (checked before anything is loaded: a refused one changes nothing)."""
        sizes = [len(g["params"]) for g in self.optimizer.param_groups]
        theirs = [len(g.get("params", ())) for g in state_dict.get("param_groups", ())]
        if theirs != sizes:
            raise ValueError(f"gossipd: the state_dict's parameter groups hold {theirs} parameters, this "
                             f"optimizer's {sizes}: it is another model's or optimizer's")
        names = {id(p): n for n, p in self._params}
        params = [p for g in self.optimizer.param_groups for p in g["params"]]
        index = {i: p for g, theirs_g in zip(self.optimizer.param_groups, state_dict["param_groups"])
                 for i, p in zip(theirs_g["params"], g["params"])}
        kind = type(self.optimizer).__name__
        for i, saved in state_dict.get("state", {}).items():
            p = index.get(i, params[0])
            for key, value in saved.items():
                if key == "step" or not isinstance(value, torch.Tensor):
                    continue
                if key not in self._keys:
                    raise ValueError(f"gossipd: the state_dict holds '{key}', which this torch.optim.{kind} does "
                                     "not keep: it is another optimizer's")
                if value.numel() != p.numel():
                    raise ValueError(f"gossipd: the optimizer's {key} of '{names[id(p)]}' in the state_dict holds "
                                     f"{value.numel()} values, the parameter {p.numel()}: it is another model's")

    def load_state_dict(self, state_dict):
        """torch's load_state_dict, in place: the hyperparameters into the
        same group dicts (a scheduler holds them), the state tensors copied
        into the arena, where joiners and checkpoints read them."""
        self._check_state_dict(state_dict)
        groups = self.optimizer.param_groups
        self.optimizer.load_state_dict(state_dict)
        for old, new in zip(groups, self.optimizer.param_groups):
            old.update({k: v for k, v in new.items() if k != "params"})
        self.optimizer.param_groups = groups
        loaded = self.optimizer.state
        with torch.no_grad():
            for _, p, s in self._slices():
                for k, key in enumerate(self._keys):
                    buf = loaded.get(p, {}).get(key)
                    if buf is None:  # none saved (no step yet): the first step starts it from zero
                        self._state_view(k, s).zero_()
                    else:
                        self._state_view(k, s).copy_(buf.reshape(-1))
        self._bind()
