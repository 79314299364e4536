"""Parameters that cannot be views of the float32 CPU arena (bfloat16,
float16 or float64 parameters, non-contiguous ones, other devices) are
mirrored instead: torch keeps the tensors (the parameter, its gradient,
the optimizer's state, all in the parameter's type), and each step copies
them into their runs of the arena and back:

    gradients to the arena       before the member's step (AllReduce-SGD
                                 averages them: then back from it)
    parameters, state to it      after the optimizer's step, before the round
    and from it                  after the round (it averaged them)

so joiners, checkpoints and the protocols see float32 values of the same
layout as a float32 model's. A mirrored parameter may be rebound: it is
read again each step."""

import torch


def viewable(t):
    """A tensor gossipd can make a view of the float32 CPU arena."""
    return t.dtype == torch.float32 and t.device.type == "cpu" and t.is_contiguous()


class ParamMirror:
    def __init__(self, slices, optimizer, keys):
        """slices: (name, parameter, slice of the arena) of every parameter;
        keys: the optimizer's per-parameter state names (optim_state.py)."""
        self.entries = [(name, p, s) for name, p, s in slices if not viewable(p)]
        self._optimizer = optimizer
        self._keys = keys

    def __bool__(self):
        return bool(self.entries)

    def names(self):
        return {name for name, _, _ in self.entries}

    @torch.no_grad()
    def start_state(self, state_view):
        """The optimizer's state tensors for the mirrored parameters, from
        the arena's (zeros, Adagrad's accumulator, a loaded state), in each
        parameter's type: torch then steps them as its own."""
        for _, p, s in self.entries:
            for k, key in enumerate(self._keys):
                self._optimizer.state[p][key] = state_view(k, s).view(p.shape).to(p.dtype, copy=True)

    @torch.no_grad()
    def grads_to_arena(self, grads):
        for _, p, s in self.entries:
            if p.grad is None:
                grads[s].zero_()
            else:
                grads[s].copy_(p.grad.reshape(-1))

    @torch.no_grad()
    def grads_from_arena(self, grads):
        for _, p, s in self.entries:
            if p.grad is None:
                p.grad = grads[s].view(p.shape).to(p.dtype, copy=True)
            else:
                p.grad.copy_(grads[s].view(p.shape))

    @torch.no_grad()
    def to_arena(self, arena, state_view):
        """The parameters and their state into the arena."""
        for _, p, s in self.entries:
            arena[s].copy_(p.reshape(-1))
            state = self._optimizer.state.get(p, {})
            for k, key in enumerate(self._keys):
                if key in state:
                    state_view(k, s).copy_(state[key].reshape(-1))

    @torch.no_grad()
    def from_arena(self, arena, state_view):
        """The arena's parameters and state into the tensors."""
        for _, p, s in self.entries:
            p.copy_(arena[s].view(p.shape))
            state = self._optimizer.state.get(p, {})
            for k, key in enumerate(self._keys):
                if key in state:
                    state[key].copy_(state_view(k, s).view(p.shape))
