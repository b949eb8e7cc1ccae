"""`plax.fwd_and_bwd`: a function's forward and backward passes as two functions.

`fwd(*args)` is `vjp` of `fun` with respect to `argnums`, returning the output and
the residuals (the vjp function, a pytree of arrays); `bwd(residuals, cotangent)`
applies them. Both are jitted by default, so a training loop that calls them
separately compiles each once instead of re-jitting a fresh vjp closure every step.
"""
from __future__ import annotations

from typing import Callable, Sequence

from plax.extend.core import check_callable, normalize_argnums
from plax_transforms.autodiff_api import dyn_args, vjp, with_dyn
from plax_transforms.jit import jit


def fwd_and_bwd(fun: Callable, argnums: int | Sequence[int], has_aux: bool = False,
                jitted: bool = True) -> tuple[Callable, Callable]:
    """(fwd, bwd): `fwd(*args)` gives `(fun(*args), residuals)` (and `aux` last when
    `has_aux`); `bwd(residuals, cotangent)` gives the cotangent of the argument
    `argnums` names (a tuple of them for a sequence)."""
    check_callable(fun, "fwd_and_bwd")
    single = isinstance(argnums, int)
    nums = normalize_argnums(argnums, "argnums")

    def fwd(*args, **kwargs):
        dyn = dyn_args(fun, args, nums, "fwd_and_bwd")
        return vjp(with_dyn(fun, args, kwargs, nums), *dyn, has_aux=has_aux)

    def bwd(residuals, cotangent):
        cts = residuals(cotangent)
        return cts[0] if single else cts

    return (jit(fwd), jit(bwd)) if jitted else (fwd, bwd)
