"""`sparse.grad` and `sparse.value_and_grad`: derivatives with respect to the stored
elements of BCOO arguments (their coordinates are integers, so they have none); the
gradient of a BCOO argument is a BCOO with the same coordinates."""
from __future__ import annotations

import functools
from typing import Callable, Sequence

from plax_transforms import autodiff_api
from plax_transforms.sparse.bcoo import BCOO


def _positions(argnums: int | Sequence[int]) -> tuple[int, ...]:
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   **options) -> Callable:
    """`plax.value_and_grad` where BCOO arguments are differentiated through their data."""
    positions = _positions(argnums)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        sparse = {i: args[i] for i in positions if isinstance(args[i], BCOO)}

        def on_data(*plain):
            rebuilt = [sparse[i]._with_data(a) if i in sparse else a
                       for i, a in enumerate(plain)]
            return fun(*rebuilt, **kwargs)

        plain = [a.data if i in sparse else a for i, a in enumerate(args)]
        value, grads = autodiff_api.value_and_grad(on_data, argnums, has_aux, **options)(*plain)
        wrap = lambda i, g: sparse[i]._with_data(g) if i in sparse else g  # noqa: E731
        if isinstance(argnums, int):
            return value, wrap(argnums, grads)
        return value, tuple(wrap(i, g) for i, g in zip(positions, grads))

    return wrapped


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         **options) -> Callable:
    """`plax.grad` where BCOO arguments are differentiated through their data."""
    both = value_and_grad(fun, argnums, has_aux, **options)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        value, grads = both(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapped



