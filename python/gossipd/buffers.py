"""A model's float32 buffers (BatchNorm's running statistics) in the arena,
after the parameters: the gossip protocols average them with the
parameters, a joiner downloads them, a checkpoint holds them. Buffers of
other types (num_batches_tracked, an int64 count) stay the process's own."""

import torch


def float_buffers(model):
    """(name, module, key, tensor) of every float32 CPU buffer, in
    named_modules order."""
    out = []
    for module_name, module in model.named_modules():
        for key, t in module._buffers.items():  # noqa: SLF001 (torch's own registry of a module's buffers)
            if t is None or t.dtype != torch.float32 or t.device.type != "cpu":
                continue
            out.append((f"{module_name}.{key}" if module_name else key, module, key, t))
    return out


def buffer_segments(buffers):
    """One segment per module's buffers, named '<module>.buffers'."""
    segments = []
    for name, _, _, t in buffers:
        segment = name.rsplit(".", 1)[0] + ".buffers" if "." in name else "buffers"
        if segments and segments[-1][0] == segment:
            segments[-1] = (segment, segments[-1][1] + t.numel())
        else:
            segments.append((segment, t.numel()))
    return segments


def bind_buffers(buffers, arena, offset):
    """Each buffer becomes a view of the arena from `offset` on."""
    for _, module, key, t in buffers:
        module._buffers[key] = arena[offset:offset + t.numel()].view_as(t)  # noqa: SLF001
        offset += t.numel()


def check_buffers(buffers, arena, offset):
    """RuntimeError naming a buffer that is no longer its arena view."""
    for name, module, key, t in buffers:
        now = module._buffers.get(key)  # noqa: SLF001
        if now is None or now.data_ptr() != arena[offset:].data_ptr():
            raise RuntimeError(
                f"gossipd: buffer '{name}' was rebound after the optimizer was made (model.to(), "
                f"load_state_dict(assign) or module.{key} = ...): it would no longer be averaged; copy values "
                "in place instead")
        offset += t.numel()
