"""Small kernel-side helpers of `plax.experimental.pallas`: `when`, `loop`, `cdiv`,
`multiple_of`, `debug_print`."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from plax_stdlib import lax, numpy as jnp
from plax_stdlib.lax.control_flow.loops import fori_loop
from plax_pallas.kernel_primitives import multiple_of_p
from plax_transforms.debug_print import debug_print as _print


def when(condition) -> Callable[[Callable[[], None]], None]:
    """`@when(c)` on a function of no arguments runs it where the scalar `c` is true
    (at once, if `c` is a Python bool)."""
    if isinstance(condition, (bool, np.bool_)):
        return lambda f: f() if condition else None
    shape = tuple(getattr(condition, "shape", np.shape(condition)))
    if shape != ():
        raise TypeError(f"Pred must be a scalar, got {condition!r} of shape {shape}.")

    def decorator(f: Callable[[], None]) -> None:
        lax.cond(condition, lambda: (f(), None)[1], lambda: None)
    return decorator


def loop(lower, upper, *, init_carry: Any = None, step=1, unroll=None):
    """`@loop(lo, hi)` on `body(i)` (or `body(i, carry)` with `init_carry`) runs it for
    `i` in `range(lo, hi, step)`; → the final carry."""
    def decorator(body: Callable):
        count = cdiv(upper - lower, step)

        def fori_body(k, carry):
            i = lower + k * step
            if init_carry is None:
                body(i)
                return carry
            return body(i, carry)
        return fori_loop(0, count, fori_body, init_carry, unroll=unroll)
    return decorator


def cdiv(a, b):
    """`ceil(a / b)` for integers (a Python int when both are)."""
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        return -(-int(a) // int(b))
    return lax.div(a + b - 1, jnp.asarray(b, jnp.result_type(a)))


def multiple_of(x, values):
    """`x`, with the promise that it is a multiple of `values` (an int or a sequence of
    them): a hint compiled kernels pass to their compiler (`kernel_primitives`)."""
    values = (values,) if isinstance(values, (int, np.integer)) else tuple(values)
    if not values or not all(isinstance(v, (int, np.integer)) and v > 0 for v in values):
        raise ValueError(f"multiple_of: values must be positive ints, got {values!r}")
    return multiple_of_p.bind(x, values=tuple(int(v) for v in values))


def debug_print(fmt: str, *args) -> None:
    """Print `fmt.format(*args)` when the kernel runs (`plax.debug.print`)."""
    _print(fmt, *args)
