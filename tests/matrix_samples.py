"""Deterministic test matrices for the linear-algebra and FFT tests."""
from __future__ import annotations

import numpy as np


def sample(dtype, shape, seed=0) -> np.ndarray:
    """Standard normal entries (real and imaginary parts for complex dtypes)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def hermitian_pd(dtype, shape, seed=0) -> np.ndarray:
    """Hermitian positive-definite matrices X Xᴴ + n I of `shape` [..., n, n]."""
    x = sample(dtype, shape, seed)
    n = shape[-1]
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)).astype(dtype)
