"""A model's floating-point buffers (BatchNorm's running statistics) in the
arena, after the parameters: the gossip protocols average them with the
parameters, AllReduce-SGD averages them every step (averaged_by_allreduce),
a joiner downloads them, a checkpoint holds them. A float32 CPU buffer is a
view of the arena; one of another type (a bfloat16 model's) is mirrored:
copied into the arena before the round and back after it. Integer buffers
(num_batches_tracked) stay the process's own."""

import torch

from gossipd.mirror import viewable


class Buffers:
    def __init__(self, model):
        # (name, module, key, tensor) of every floating-point buffer, in named_modules order.
        self.entries = []
        for module_name, module in model.named_modules():
            for key, t in module._buffers.items():  # noqa: SLF001 (torch's own registry of a module's buffers)
                if t is None or not t.is_floating_point():
                    continue
                self.entries.append((f"{module_name}.{key}" if module_name else key, module, key, t))
        self.floats = sum(t.numel() for *_, t in self.entries)

    def segments(self):
        """One segment per module's buffers, named '<module>.buffers'."""
        segments = []
        for name, _, _, t in self.entries:
            segment = name.rsplit(".", 1)[0] + ".buffers" if "." in name else "buffers"
            if segments and segments[-1][0] == segment:
                segments[-1] = (segment, segments[-1][1] + t.numel())
            else:
                segments.append((segment, t.numel()))
        return segments

    def flat(self):
        """Their values, flat float32, in the arena's order."""
        return [t.detach().reshape(-1).float() for *_, t in self.entries]

    def _runs(self, region):
        offset = 0
        for name, module, key, t in self.entries:
            yield name, module, key, t, region[offset:offset + t.numel()]
            offset += t.numel()

    def bind(self, region):
        """Each viewable buffer becomes a view of `region` (the arena after
        the parameters); the others keep their tensors, mirrored."""
        for _, module, key, t, run in self._runs(region):
            if viewable(t):
                module._buffers[key] = run.view_as(t)  # noqa: SLF001

    def check(self, region):
        """RuntimeError naming a buffer no longer its arena view (or, for a
        mirrored one, no longer the tensor it was)."""
        for name, module, key, t, run in self._runs(region):
            now = module._buffers.get(key)  # noqa: SLF001
            want = run if viewable(t) else t
            if now is None or now.data_ptr() != want.data_ptr():
                raise RuntimeError(
                    f"gossipd: buffer '{name}' was rebound after the optimizer was made (model.to(), "
                    f"load_state_dict(assign) or module.{key} = ...): it would no longer be averaged; copy values "
                    "in place instead")

    @torch.no_grad()
    def to_arena(self, region):
        """The mirrored buffers' values into `region`."""
        for _, _, _, t, run in self._runs(region):
            if not viewable(t):
                run.copy_(t.reshape(-1))

    @torch.no_grad()
    def from_arena(self, region):
        """`region`'s values into the mirrored buffers."""
        for _, _, _, t, run in self._runs(region):
            if not viewable(t):
                t.copy_(run.view(t.shape))
