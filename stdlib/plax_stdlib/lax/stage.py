"""`stage`: the identity, binding a primitive so that a concrete value (a Python
scalar or NumPy array) becomes a value of the active trace, or a device array
outside any trace."""
from __future__ import annotations

from plax.extend.ad import linear_jvp
from plax.extend.batching import unary_batcher
from plax.extend.constructors import standard_primitive
from plax.extend.core import ShapedArray, Tracer, get_aval

stage_p = standard_primitive(
    "lax.stage", lambda x: ShapedArray(x.shape, x.dtype, x.weak_type),
    lambda ctx, x: x, jvp=linear_jvp(), batching=unary_batcher(),
    transpose=lambda ct, x: [ct])


def stage(x, /):
    """Returns `x` itself as a value of the current trace: a device array outside
    any trace, a tracer inside one.

    Args:
        x: an array or scalar.

    Returns:
        `x`'s value, staged.

    Examples:
        >>> import numpy as np
        >>> from plax import lax
        >>> lax.stage(np.float32(2.0))
        Array(2., dtype=float32)
    """
    if isinstance(x, Tracer):
        return x
    get_aval(x)  # a TypeError for values that are not arrays
    return stage_p.bind(x)

