"""Fashion-MNIST as torch tensors, from the Debian package's IDX files
(dataset-fashion-mnist), normalised as gossipd's trainer does."""

import gzip
from pathlib import Path

import numpy as np
import torch

DEFAULT_DIR = Path("/usr/share/datasets/fashion-mnist")
MEAN, STD = 0.2860, 0.3530


def _read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 8:
        raise ValueError(f"{path}: not an IDX file of unsigned bytes (reinstall dataset-fashion-mnist)")
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(split="train", directory=DEFAULT_DIR):
    """(images [N, 1, 28, 28] float32, labels [N] int64) of split "train" or "test"."""
    prefix = {"train": "train", "test": "t10k"}[split]
    d = Path(directory)
    images = _read_idx(d / f"{prefix}-images-idx3-ubyte.gz")
    labels = _read_idx(d / f"{prefix}-labels-idx1-ubyte.gz")
    if len(images) != len(labels):
        raise ValueError(f"{d}: {len(images)} images but {len(labels)} labels")
    x = (torch.from_numpy(images.copy()).float().div_(255.0) - MEAN) / STD
    return x.unsqueeze(1), torch.from_numpy(labels.copy()).long()
