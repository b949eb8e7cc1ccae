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
    """Splits the reverse-mode derivative of `fun` into a forward and a backward
    function that can be called separately.

    `fwd` runs `fun` and keeps the residuals the backward pass needs; `bwd` maps
    those residuals and an output cotangent to the gradient. This is `plax.vjp`
    as two functions, handy when the forward and backward passes happen at
    different places of a program (pipelining, custom training loops).

    Args:
        fun: the function to differentiate.
        argnums: the positional argument (an int) or arguments (a sequence) to
            differentiate with respect to.
        has_aux: `fun` returns `(output, aux)`; `fwd` then returns `aux` last.
        jitted: compile `fwd` and `bwd` with `plax.jit`.

    Returns:
        `(fwd, bwd)`: `fwd(*args) -> (fun(*args), residuals)` and
        `bwd(residuals, cotangent)` giving the cotangent of the argument
        `argnums` names (a tuple of them for a sequence).

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> fwd, bwd = plax.fwd_and_bwd(lambda x: 2 * jnp.sin(x), argnums=0)
        >>> y, residuals = fwd(0.0)
        >>> bwd(residuals, 1.0)  # 2 * cos(0)
        Array(2., dtype=float32, weak_type=True)
    """
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
