"""Numerical checks for users, plugin authors and plax's own tests.

`check_primitive(prim, *example_args, **params)` checks a primitive's rules against
each other (see `plax_transforms.conformance`).

`check_grads(f, args, order)` compares forward mode with central finite differences
and reverse mode with forward mode (the dot-product test `<u, J v> == <J^T u, v>`),
then recurses on the directional derivative for higher orders. The transforms are
reached through the facade (`plax.jvp`, `plax.vjp`), never imported here.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

import plax
from plax_transforms.conformance import check_primitive

__all__ = ["check_grads", "check_jvp", "check_primitive", "check_vjp"]

_DEFAULT_EPS = {np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-5,
                np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5}
_DEFAULT_TOL = {np.dtype(np.float32): 2e-2, np.dtype(np.float64): 1e-5,
                np.dtype(np.complex64): 2e-2, np.dtype(np.complex128): 1e-5}


def _random_like(rng, x):
    """A random direction in `x`'s space: complex values get random imaginary parts
    too, so derivatives are checked along every real direction."""
    x = np.asarray(x)
    if np.iscomplexobj(x):
        return (rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)).astype(x.dtype)
    return rng.standard_normal(x.shape).astype(x.dtype)


def _wide(x) -> np.ndarray:
    x = np.asarray(x)
    return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)


def _inner(xs, ys) -> float:
    """The real pairing `Re sum(x * y)`, under which vjp is jvp's transpose (complex
    values included: cotangents are not conjugated)."""
    return float(sum(np.real(np.sum(_wide(x) * _wide(y))) for x, y in zip(xs, ys)))


def _flat_out(out) -> list:
    return plax.tree_util.tree_leaves(out)


def _check_close(what: str, got, want, atol, rtol):
    got, want = _wide(got), _wide(want)
    if not np.allclose(got, want, atol=atol, rtol=rtol):
        raise AssertionError(f"check_grads: {what} mismatch:\n got  {got}\n want {want}")


def check_jvp(f: Callable, args: Sequence, atol=None, rtol=None, eps=None, rng=None):
    """Forward mode against central differences along a random direction."""
    rng = np.random.default_rng(0) if rng is None else rng
    dtype = np.asarray(args[0]).dtype
    eps = eps or _DEFAULT_EPS.get(dtype, 1e-3)
    atol = atol or _DEFAULT_TOL.get(dtype, 1e-2)
    rtol = rtol or _DEFAULT_TOL.get(dtype, 1e-2)
    v = [_random_like(rng, a) for a in args]
    _, t = plax.jvp(f, tuple(args), tuple(v))
    plus = f(*(np.asarray(a) + eps * d for a, d in zip(args, v)))
    minus = f(*(np.asarray(a) - eps * d for a, d in zip(args, v)))
    for ti, p, m in zip(_flat_out(t), _flat_out(plus), _flat_out(minus)):
        fd = (_wide(p) - _wide(m)) / (2 * eps)
        _check_close("jvp vs finite differences", ti, fd, atol, rtol)


def check_vjp(f: Callable, args: Sequence, atol=None, rtol=None, rng=None):
    """Reverse mode against forward mode: `<u, jvp(v)> == <vjp(u), v>`."""
    rng = np.random.default_rng(1) if rng is None else rng
    dtype = np.asarray(args[0]).dtype
    atol = atol or _DEFAULT_TOL.get(dtype, 1e-2)
    rtol = rtol or _DEFAULT_TOL.get(dtype, 1e-2)
    v = [_random_like(rng, a) for a in args]
    out, f_vjp = plax.vjp(f, *args)
    u = plax.tree_util.tree_map(lambda o: _random_like(rng, o), out)
    _, t = plax.jvp(f, tuple(args), tuple(v))
    ct = f_vjp(u)
    _check_close("vjp vs jvp (dot-product test)", _inner(ct, v),
                 _inner(_flat_out(u), _flat_out(t)), atol, rtol)


def check_grads(f: Callable, args: Sequence, order: int, modes=("fwd", "rev"), atol=None,
                rtol=None, eps=None):
    """Check derivatives of `f` at `args` up to `order` in the given modes."""
    args = tuple(args)
    rng = np.random.default_rng(order)
    if "fwd" in modes:
        check_jvp(f, args, atol, rtol, eps, rng)
    if "rev" in modes:
        check_vjp(f, args, atol, rtol, rng)
    if order > 1:
        v = tuple(_random_like(rng, a) for a in args)
        check_grads(lambda *xs: plax.jvp(f, xs, v)[1], args, order - 1, modes, atol, rtol, eps)
