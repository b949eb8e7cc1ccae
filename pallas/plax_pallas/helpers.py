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
    """A decorator that runs a function of no arguments only where `condition` holds:
    the kernel-side `if`.

    Inside a kernel, conditions on program ids or values are traced, so Python's
    `if` cannot test them; `@pl.when(c)` stages a `lax.cond`. A Python bool runs the
    function at once (or not at all).

    Args:
        condition: a scalar boolean (traced or Python).

    Returns:
        A decorator; the decorated name is bound to None.

    Raises:
        TypeError: `condition` is not a scalar.

    Examples:
        Zero the first block, copy the others:

        >>> from plax.experimental import pallas as pl
        >>> def kernel(x_ref, o_ref):
        ...     o_ref[...] = x_ref[...]
        ...     @pl.when(pl.program_id(0) == 0)
        ...     def _():
        ...         o_ref[...] = jnp.zeros_like(o_ref[...])
        >>> spec = pl.BlockSpec((2,), lambda i: (i,))
        >>> pl.pallas_call(kernel, out_shape=plax.ShapeDtypeStruct((4,), jnp.float32),
        ...                grid=(2,), in_specs=[spec], out_specs=spec,
        ...                interpret=True)(jnp.arange(4.0))
        Array([0., 0., 2., 3.], dtype=float32)
    """
    if isinstance(condition, (bool, np.bool_)):
        return lambda f: f() if condition else None
    shape = tuple(getattr(condition, "shape", np.shape(condition)))
    if shape != ():
        raise TypeError(f"Pred must be a scalar, got {condition!r} of shape {shape}.")

    def decorator(f: Callable[[], None]) -> None:
        lax.cond(condition, lambda: (f(), None)[1], lambda: None)
    return decorator


def loop(lower, upper, *, init_carry: Any = None, step=1, unroll=None):
    """A decorator that runs a loop body for `i` in `range(lower, upper, step)`, as a
    `fori_loop` (the kernel-side `for`).

    The body is `body(i)`, or `body(i, carry) -> carry` when `init_carry` is given;
    decorating runs the loop at once.

    Args:
        lower: the first index (int or traced int scalar).
        upper: the bound (excluded).
        init_carry: the initial carry, or None for a body without one.
        step: the index increment.
        unroll: passed to `fori_loop`.

    Returns:
        A decorator that returns the final carry (None without one).

    Examples:
        >>> from plax.experimental import pallas as pl
        >>> def total(x_ref, o_ref):
        ...     def body(i, acc):
        ...         return acc + x_ref[i]
        ...     o_ref[0] = pl.loop(0, 4, init_carry=jnp.float32(0))(body)
        >>> pl.pallas_call(total, out_shape=plax.ShapeDtypeStruct((1,), jnp.float32),
        ...                interpret=True)(jnp.arange(4.0))
        Array([6.], dtype=float32)
    """
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
    """Integer division rounding up, `ceil(a / b)`: the number of blocks of size `b`
    needed to cover `a` elements (e.g. a grid's size).

    Args:
        a: an int or integer array.
        b: a positive int or integer array.

    Returns:
        A Python int when both are Python ints, else an array.

    Examples:
        >>> from plax.experimental import pallas as pl
        >>> pl.cdiv(10, 4), pl.cdiv(8, 4)
        (3, 2)
    """
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        return -(-int(a) // int(b))
    return lax.div(a + b - 1, jnp.asarray(b, jnp.result_type(a)))


def multiple_of(x, values):
    """Returns `x` unchanged, with the promise that it is a multiple of `values`.

    A hint for compiled kernels (alignment of dynamic offsets lets the compiler emit
    aligned loads); interpret mode ignores it.

    Args:
        x: an integer scalar (typically computed from program ids).
        values: a positive int, or a sequence of them (one per element of `x`).

    Returns:
        `x`.

    Raises:
        ValueError: `values` are not positive ints.

    Examples:
        >>> from plax.experimental import pallas as pl
        >>> def triple(x_ref, o_ref):
        ...     start = pl.multiple_of(pl.program_id(0) * 2, 2)
        ...     o_ref[pl.ds(start, 2)] = 3 * x_ref[pl.ds(start, 2)]
        >>> pl.pallas_call(triple, out_shape=plax.ShapeDtypeStruct((4,), jnp.float32),
        ...                grid=(2,), interpret=True)(jnp.arange(4.0))
        Array([0., 3., 6., 9.], dtype=float32)
    """
    values = (values,) if isinstance(values, (int, np.integer)) else tuple(values)
    if not values or not all(isinstance(v, (int, np.integer)) and v > 0 for v in values):
        raise ValueError(f"multiple_of: values must be positive ints, got {values!r}")
    return multiple_of_p.bind(x, values=tuple(int(v) for v in values))


def debug_print(fmt: str, *args) -> None:
    """Prints `fmt.format(*args)` each time the kernel runs (values as they are then),
    like `plax.debug.print`.

    Args:
        fmt: a `str.format` template.
        *args: values (traced or not) to format.

    Examples:
        >>> from plax.experimental import pallas as pl
        >>> def kernel(x_ref, o_ref):
        ...     pl.debug_print("step {}", pl.program_id(0))
        ...     o_ref[...] = x_ref[...]
        >>> spec = pl.BlockSpec((1,), lambda i: (i,))
        >>> out = pl.pallas_call(kernel, out_shape=plax.ShapeDtypeStruct((2,), jnp.float32),
        ...                      grid=(2,), in_specs=[spec], out_specs=spec,
        ...                      interpret=True)(jnp.zeros(2)).block_until_ready()
        step 0
        step 1
    """
    _print(fmt, *args)
