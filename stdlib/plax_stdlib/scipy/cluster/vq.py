"""`plax.scipy.cluster.vq.vq`: each observation's nearest code in a code book (by
Euclidean distance, the first of equally near codes) and its distance to it."""
from __future__ import annotations

from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util


def vq(obs, code_book, check_finite: bool = True):
    """(code, dist) for `obs` (M, N) against `code_book` (K, N); 1-D arguments hold
    one-number observations and codes. `check_finite` is ignored, as in JAX (a NaN
    observation gets code 0 and distance NaN)."""
    del check_finite
    util.check_arraylike("scipy.cluster.vq.vq", obs, code_book)
    obs, code_book = util.promote_dtypes_inexact(obs, code_book)
    if obs.ndim != code_book.ndim:
        raise ValueError("Observation and code_book should have the same rank, got shapes "
                         f"{obs.shape} and {code_book.shape}")
    if obs.ndim == 1:
        obs, code_book = obs[:, None], code_book[:, None]
    if obs.ndim != 2:
        raise ValueError(f"ndim different than 1 or 2 are not supported, got shape {obs.shape}")
    if obs.shape[1] != code_book.shape[1]:
        raise TypeError(f"vq: observations of {obs.shape[1]} features cannot be matched to "
                         f"codes of {code_book.shape[1]} (shapes {obs.shape} and "
                         f"{code_book.shape})")
    if code_book.shape[0] == 0:
        raise ValueError("vq: the code book is empty, so no observation has a nearest code")
    distances = jnp.linalg.norm(obs[:, None, :] - code_book[None, :, :], axis=-1)
    code = jnp.argmin(distances, axis=-1)
    return code, jnp.take_along_axis(distances, code[:, None], axis=1)[:, 0]
