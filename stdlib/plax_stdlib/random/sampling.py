"""The argument checks every sampler shares: shapes, dtypes, parameter broadcasting,
and `out_sharding` (the result's layout on a mesh with `Explicit` axes)."""
from __future__ import annotations

import numpy as np

from plax.extend import dtypes
from plax_stdlib.lax.out_sharding import laid_out
from plax_stdlib.numpy.util import broadcast_shapes, canonicalize_shape


def check_shape(name: str, shape: tuple[int, ...], *param_shapes) -> None:
    """ValueError unless the parameters' shapes broadcast to exactly `shape`."""
    if param_shapes:
        result = broadcast_shapes(shape, *param_shapes)
        if result != tuple(shape):
            raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                             f"argument, and the result of broadcasting the shapes must equal "
                             f"the shape argument, but got result {result} for shape argument "
                             f"{tuple(shape)}.")


def broadcast_param_shapes(name: str, shape, *args) -> tuple[int, ...]:
    """`shape` checked against the parameters', or their broadcast when None."""
    arg_shapes = [np.shape(a) for a in args]
    if shape is None:
        return broadcast_shapes(*arg_shapes) if arg_shapes else ()
    shape = canonicalize_shape(shape, name)
    check_shape(name, shape, *arg_shapes)
    return shape


def float_dtype(name: str, dtype) -> np.dtype:
    """The `dtype=` of a continuous sampler: the default float when None."""
    dtype = dtypes.check_and_canonicalize_user_dtype(float if dtype is None else dtype, name)
    if not dtypes.issubdtype(dtype, np.floating):
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dtype}")
    return dtype


def check_safe_to_cast(name: str, dtype, *args) -> None:
    """TypePromotionError for parameters that `dtype` cannot hold without losing
    precision (float64 parameters of a float32 sampler...)."""
    for arg in args:
        arg_dtype = dtypes.dtype(arg)
        if arg_dtype != dtype and dtypes.result_type(arg, dtype) != dtype:
            raise dtypes.TypePromotionError(
                f"In arguments to {name}, cannot safely cast argument of type {arg_dtype} "
                f"to {dtype}")


def sampled(name: str, out_sharding, shape, compute, *operands):
    """`compute(*operands)`, laid out as `out_sharding` as JAX's samplers do (with the
    explicit mesh axes made `Auto` inside, see `plax_stdlib.lax.out_sharding.laid_out`),
    so the values are those of an unsharded draw. Without one, a draw whose `shape` (as
    the sampler's checks leave it: `()` or None) is empty is replicated when every axis
    of the mesh in context is `Explicit`, as in JAX."""
    if out_sharding is None and not shape:
        from plax import sharding
        mesh = sharding.get_abstract_mesh()
        if mesh.are_all_axes_explicit:
            out_sharding = sharding.PartitionSpec()
    return laid_out(name, out_sharding, compute, *operands)
