"""gossipd for Python: train your own PyTorch model with Crossover-SGD, SGP or
AllReduce-SGD as a member of a gossipd cluster (see gossipd.torch).

The C++ member is gossipd._gossipd; gossipd.torch binds a torch model to it.
"""

from gossipd._gossipd import Member  # noqa: F401

__all__ = ["Member"]
