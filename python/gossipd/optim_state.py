"""Which per-parameter state of a torch optimizer lives in gossipd's arena
(so a joiner downloads it and a checkpoint holds it), and the step count
torch keeps beside it."""

import torch

KEPT = "SGD, Adam, AdamW, RMSprop and Adagrad"


def state_keys(optimizer):
    """The names of `optimizer`'s per-parameter state tensors, in their
    order in the arena (each a run of the parameters' length). TypeError
    for an optimizer whose state gossipd does not know."""
    groups = optimizer.param_groups

    def any_(key):
        return any(g.get(key) for g in groups)

    if isinstance(optimizer, torch.optim.SGD):
        return ["momentum_buffer"] if any_("momentum") else []
    if isinstance(optimizer, (torch.optim.Adam, torch.optim.AdamW)):
        return ["exp_avg", "exp_avg_sq"] + (["max_exp_avg_sq"] if any_("amsgrad") else [])
    if isinstance(optimizer, torch.optim.RMSprop):
        return (["square_avg"] + (["momentum_buffer"] if any_("momentum") else [])
                + (["grad_avg"] if any_("centered") else []))
    if isinstance(optimizer, torch.optim.Adagrad):
        return ["sum"]
    raise TypeError(f"gossipd: the state of torch.optim.{type(optimizer).__name__} cannot be kept in the "
                    f"arena (a joiner would start without it, a checkpoint would miss it): use {KEPT}")


def initial_state(optimizer, params, keys, extra=0):
    """The arena's start: each key's tensor where the optimizer has one
    (Adagrad's initial accumulator, a loaded state), else zeros; each key's
    run `extra` zeros longer (the buffers after the parameters, which no
    optimizer steps). None where the optimizer has no state yet (the
    member starts it at zeros: no copy made)."""
    if not any(key in optimizer.state.get(p, {}) for key in keys for p in params):
        return None
    runs = []
    for key in keys:
        for p in params:
            t = optimizer.state.get(p, {}).get(key)
            runs.append(t.detach().reshape(-1).float() if t is not None else torch.zeros(p.numel()))
        runs.append(torch.zeros(extra))
    return torch.cat(runs) if runs else torch.zeros(0)


def set_steps(optimizer, params, steps, only_missing=False):
    """The step count torch keeps per parameter (Adam's bias correction)
    set to `steps`: at the start (0), after a join (the cluster's round)."""
    if isinstance(optimizer, torch.optim.SGD):
        return
    for p in params:
        state = optimizer.state[p]
        if only_missing and "step" in state:
            continue
        if isinstance(optimizer, torch.optim.RMSprop):
            state["step"] = int(steps)
            continue
        old = state.get("step")
        capturable = optimizer.defaults.get("capturable") or optimizer.defaults.get("fused")
        shape = old.shape if isinstance(old, torch.Tensor) else ((1,) if capturable else ())
        state["step"] = torch.full(shape, float(steps))
