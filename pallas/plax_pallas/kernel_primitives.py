"""Primitives of the kernel language that carry a compiler hint through the Jaxpr.

`multiple_of(x, values)` is `x` with the promise that it is a multiple of `values`
(`pl.multiple_of`): interpret mode and every transformation see `x` itself; a
compiled platform's lowering tells its compiler (Mosaic: `tpu.assume_multiple`, so
that a `pl.ds(pl.multiple_of(i * 8, 8), 8)` window is known to be aligned).
"""
from __future__ import annotations

from plax.extend.constructors import standard_primitive


def _multiple_of_jvp(primals, tangents, *, values):
    (x,), (t,) = primals, tangents
    return multiple_of_p.bind(x, values=values), t


multiple_of_p = standard_primitive(
    "pallas.multiple_of", lambda aval, *, values: aval, lambda ctx, x, *, values: x,
    impl=lambda x, *, values: x, jvp=_multiple_of_jvp,
    batching=lambda axis_data, args, dims, *, values: (
        multiple_of_p.bind(args[0], values=values), dims[0]))

__all__ = ["multiple_of_p"]
