"""Float parameters of a network (weights, biases, optional batch norm) and batch-norm folding.

dnnmap's IR carries shapes only (the importers fold batch-norm nodes into the convolutions'
structure, not their values), so the NMP target keeps the float parameters beside the network:
random He-normal weights with a fixed seed by default, optionally with a batch norm after every
convolution, or an ``.npz`` file (``LAYER/weight``, ``LAYER/bias``, ``LAYER/bn_gamma``, ``bn_beta``,
``bn_mean``, ``bn_var``). Before quantization :func:`fold_batchnorm` folds each batch norm into its
convolution (TSO Section V step 2, the TF Graph Transform Tool's fold):

    w' = w * gamma / sqrt(var + eps),   b' = (b - mean) * gamma / sqrt(var + eps) + beta
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dnnmap.errors import InputFileError
from dnnmap.fileio import open_regular
from dnnmap.targets.nmp.layers import NmpLayer

BN_EPS = 1e-5


@dataclass(frozen=True)
class BatchNorm:
    gamma: np.ndarray
    beta: np.ndarray
    mean: np.ndarray
    var: np.ndarray

    def apply(self, y: np.ndarray) -> np.ndarray:
        """Batch norm (inference) of a C x H x W map."""
        scale = self.gamma / np.sqrt(self.var + BN_EPS)
        return (y - self.mean[:, None, None]) * scale[:, None, None] + self.beta[:, None, None]


@dataclass(frozen=True)
class ConvParams:
    """Float weights (M x N x Kh x Kw), bias (M) and the batch norm that follows, if any."""

    weight: np.ndarray
    bias: np.ndarray
    bn: BatchNorm | None = None


def fold_batchnorm(p: ConvParams) -> ConvParams:
    """The convolution with its batch norm folded into weights and bias (module docstring)."""
    if p.bn is None:
        return p
    scale = p.bn.gamma / np.sqrt(p.bn.var + BN_EPS)
    return ConvParams(p.weight * scale[:, None, None, None], (p.bias - p.bn.mean) * scale + p.bn.beta)


def random_params(layers: tuple[NmpLayer, ...], seed: int = 0, batchnorm: bool = False) -> dict[str, ConvParams]:
    """He-normal weights, small biases (and a random batch norm per non-FC convolution) from ``seed``."""
    rng = np.random.default_rng(seed)
    out = {}
    for ly in layers:
        if not ly.is_conv:
            continue
        m, n, kh, kw = ly.weight_shape
        w = rng.normal(0.0, np.sqrt(2.0 / (n * kh * kw)), size=(m, n, kh, kw))
        bn = None
        if batchnorm and ly.kind != "fc":
            bn = BatchNorm(rng.uniform(0.5, 1.5, m), rng.normal(0, 0.1, m), rng.normal(0, 0.1, m),
                           rng.uniform(0.5, 1.5, m))
        out[ly.name] = ConvParams(w, rng.normal(0.0, 0.05, m), bn)
    return out


def save_params(params: dict[str, ConvParams], path: Path) -> None:
    arrays = {}
    for name, p in params.items():
        arrays[f"{name}/weight"], arrays[f"{name}/bias"] = p.weight, p.bias
        if p.bn is not None:
            for f in ("gamma", "beta", "mean", "var"):
                arrays[f"{name}/bn_{f}"] = getattr(p.bn, f)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def load_params(path: Path, layers: tuple[NmpLayer, ...]) -> dict[str, ConvParams]:
    """Parameters of every convolution of ``layers`` from ``path``, shapes checked."""
    with open_regular(path, ".npz parameter file") as fh:  # special files refused before reading
        try:
            loaded = np.load(fh, allow_pickle=False)
            if not isinstance(loaded, np.lib.npyio.NpzFile):
                raise InputFileError(f"{path}: a single .npy array, not a .npz archive of named parameters "
                                     "(LAYER/weight, LAYER/bias, ...); save them with numpy.savez")
            with loaded as z:
                raw = {k: z[k] for k in z.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            raise InputFileError(f"{path}: not a readable .npz parameter file ({e})") from e
    not_real = sorted(k for k, a in raw.items() if a.dtype.kind not in "fiu")
    if not_real:
        raise InputFileError(f"{path}: field '{not_real[0]}' holds {raw[not_real[0]].dtype} values; parameters are "
                             "real numbers (float or integer arrays)")
    expected = {f"{ly.name}/{key}" for ly in layers if ly.is_conv
                for key in ("weight", "bias", "bn_gamma", "bn_beta", "bn_mean", "bn_var")}
    unknown = sorted(set(raw) - expected)
    if unknown:
        raise InputFileError(f"{path}: field(s) {', '.join(unknown[:4])} name no parameter of the network's "
                             "convolutions (LAYER/weight, LAYER/bias, LAYER/bn_gamma|bn_beta|bn_mean|bn_var)")
    arrays = {k: a.astype(np.float64) for k, a in raw.items()}
    out = {}
    for ly in layers:
        if not ly.is_conv:
            continue
        m = ly.weight_shape[0]
        want = {"weight": ly.weight_shape, "bias": (m,)}
        got = {}
        for key, shape in want.items():
            a = arrays.get(f"{ly.name}/{key}")
            if a is None or a.shape != shape or not np.all(np.isfinite(a)):
                raise InputFileError(f"{path}: field '{ly.name}/{key}' must be a finite array of shape {shape}"
                                     f"{'' if a is None else f', got shape {a.shape}'}")
            got[key] = a
        bn_keys = [f"{ly.name}/bn_{f}" for f in ("gamma", "beta", "mean", "var")]
        bn = None
        if any(k in arrays for k in bn_keys):
            if not all(k in arrays and arrays[k].shape == (m,) and np.all(np.isfinite(arrays[k])) for k in bn_keys) \
                    or np.any(arrays[bn_keys[3]] < 0):
                raise InputFileError(f"{path}: layer {ly.name!r}: batch norm needs bn_gamma, bn_beta, bn_mean and "
                                     f"bn_var of shape ({m},), finite, bn_var >= 0")
            bn = BatchNorm(*(arrays[k] for k in bn_keys))
        out[ly.name] = ConvParams(got["weight"], got["bias"], bn)
    return out


def folded(params: dict[str, ConvParams]) -> dict[str, ConvParams]:
    return {k: fold_batchnorm(p) for k, p in params.items()}


__all__ = ["BatchNorm", "ConvParams", "fold_batchnorm", "folded", "random_params", "save_params", "load_params"]
