"""Where a model's parameters, its optimizer's state and its buffers lie in
the arena the C++ member owns.

    parameters in one run per module     a segment per module (the unit a
                                         gossip round exchanges)
    the buffers after them               a segment per module's buffers
    the state: a run per key of the      its own arena (optimizer_state),
    parameters' length                   which joins and checkpoints carry

With `gossiped_state` (SGP's default, DistributedOptimizer's
average_state) each module's
segment holds its parameters followed by their state, key by key, so a
round averages a parameter and its moments with the same peer and weight:
were they apart, a member's first moment could meet another's second
(Adam's m / sqrt(v) with m from one replica and a near-zero v from
another diverges at the first rounds, measured)."""

import torch


def module_runs(named_params):
    """(module, [(name, parameter), ...]) in order: the parameters of a
    module are contiguous in named_parameters()."""
    runs = []
    for name, p in named_params:
        module = name.rsplit(".", 1)[0] if "." in name else name
        if runs and runs[-1][0] == module:
            runs[-1][1].append((name, p))
        else:
            runs.append((module, [(name, p)]))
    return runs


class ArenaLayout:
    def __init__(self, named_params, keys, gossiped_state):
        self.keys = keys
        self.gossiped_state = gossiped_state and bool(keys)
        stride = 1 + len(keys) if self.gossiped_state else 1
        self.entries = []  # (name, parameter, its slice of the arena)
        self._state_shift = {}  # a slice's start -> how far its key 0 run lies after it
        self.segments = []
        offset = 0
        for module, params in module_runs(named_params):
            n = sum(p.numel() for _, p in params)
            at = offset
            for name, p in params:
                self.entries.append((name, p, slice(at, at + p.numel())))
                self._state_shift[at] = n
                at += p.numel()
            self.segments.append((module, n * stride))
            offset += n * stride
        self.param_floats = offset  # where the buffers begin

    def state_view(self, arena, state_arena, k, s):
        """The run of state key k for the parameter at slice s."""
        if self.gossiped_state:
            shift = (k + 1) * self._state_shift[s.start]
            return arena[s.start + shift:s.stop + shift]
        n = arena.numel()
        return state_arena[k * n + s.start:k * n + s.stop]

    def initial(self, optimizer, buffers):
        """The arena's start: the parameters, (gossiped) their state where
        the optimizer has one (else zeros), then `buffers` (flat tensors)."""
        # One allocation, every float written once (at 31M parameters a zeroed copy costs 0.1 s more).
        flats = sum(b.numel() for b in buffers)
        arena = torch.empty(self.param_floats + flats)
        for _, p, s in self.entries:
            arena[s] = p.detach().reshape(-1)
            for k, key in enumerate(self.keys if self.gossiped_state else ()):
                t = optimizer.state.get(p, {}).get(key)
                run = self.state_view(arena[:self.param_floats], None, k, s)
                if t is None:
                    run.zero_()
                else:
                    run.copy_(t.detach().reshape(-1))
        if buffers:
            torch.cat(buffers, out=arena[self.param_floats:])
        return arena
