"""Products and views of `plax.numpy.linalg` (the array API's versions, which act on
the last axes): matmul, vecdot, tensordot, multi_dot, cross, outer, trace,
diagonal, matrix_transpose."""
from __future__ import annotations


from plax.extend.core import get_aval
from plax_stdlib import lax
from plax_stdlib.numpy import linalg_products, shape_ops, ufuncs, util


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    """The matrix product `x1 @ x2` (the array API's name for `jnp.matmul`, with JAX's
    `precision` and `preferred_element_type`).

    Args:
        x1: an array of at least one dimension.
        x2: an array of at least one dimension.
        precision: None, a `lax.Precision`, or a pair of them.
        preferred_element_type: the dtype to accumulate in and return.

    Returns:
        The product.

    Examples:
        >>> jnp.linalg.matmul(jnp.ones((2, 3)), jnp.ones((3,)))
        Array([3., 3.], dtype=float32)
    """
    return linalg_products.matmul(x1, x2, precision=precision,
                                  preferred_element_type=preferred_element_type)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None):
    """Sums of products over `axes`: the last `axes` axes of `x1` with the first of `x2`
    (the array API's form of `jnp.tensordot`).

    Args:
        x1: an array.
        x2: an array.
        axes: an int, or a pair of sequences of axes.
        precision: None, a `lax.Precision`, or a pair of them.
        preferred_element_type: the dtype to accumulate in and return.

    Returns:
        The contracted array.

    Examples:
        >>> jnp.linalg.tensordot(jnp.ones((2, 3)), jnp.ones((3, 4)), axes=1).shape
        (2, 4)
    """
    return linalg_products.tensordot(x1, x2, axes, precision=precision,
                                     preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    """The vector dot product along `axis`: `sum(conj(x1) * x2, axis)`, the other axes
    broadcast together.

    From the array API (as `numpy.vecdot`), plus JAX's `precision` and
    `preferred_element_type` (see `jnp.dot`).

    Args:
        x1: an array (conjugated if complex).
        x2: an array; the sizes along `axis` must match.
        axis: the axis to contract.
        precision: None, a `lax.Precision`, or a pair of them.
        preferred_element_type: the dtype to accumulate in and return.

    Returns:
        The broadcast shape without `axis`.

    Raises:
        ValueError: sizes along `axis` that differ.

    Examples:
        >>> jnp.vecdot(jnp.array([[1, 2], [3, 4]]), jnp.array([1, 1]))
        Array([3, 7], dtype=int32)
    """
    x1, x2 = util.promote_args("jnp.linalg.vecdot", x1, x2)
    s1, s2 = util.shape_of(x1), util.shape_of(x2)
    n1, n2 = len(s1), len(s2)
    if not s1 or not s2:
        raise ValueError(f"jnp.linalg.vecdot needs arrays of at least one dimension, got shapes "
                         f"{s1} and {s2}")
    a1, a2 = (util.canonicalize_axis(axis, n, IndexError) for n in (n1, n2))  # JAX's class
    if s1[a1] != s2[a2]:
        raise ValueError(f"jnp.linalg.vecdot: axis {axis} has size {s1[a1]} in x1 {s1} but "
                         f"{s2[a2]} in x2 {s2}")
    x1 = shape_ops.moveaxis(x1, a1, -1)
    x2 = shape_ops.moveaxis(x2, a2, -1)
    if util.dtype_category(util.dtype_of(x1)) == "c":
        x1 = lax.conj(x1)
    batch = util.broadcast_shapes(util.shape_of(x1)[:-1], util.shape_of(x2)[:-1])
    target = (*batch, s1[a1])
    x1, x2 = util.broadcast_to_shape(x1, target), util.broadcast_to_shape(x2, target)
    dims = tuple(range(len(batch)))
    return lax.dot_general(x1, x2, (((len(batch),), (len(batch),)), (dims, dims)), precision,
                           util.check_user_dtype(preferred_element_type, "jnp.linalg.vecdot"))


def outer(x1, x2, /):
    """The outer product of two vectors (the array API's form of `jnp.outer`, for 1-D
    inputs only).

    Args:
        x1: a 1-D array.
        x2: a 1-D array.

    Returns:
        A 2-D array.

    Raises:
        ValueError: inputs that are not 1-D.

    Examples:
        >>> jnp.linalg.outer(jnp.array([1, 2]), jnp.array([3, 4]))
        Array([[3, 4],
               [6, 8]], dtype=int32)
    """
    x1, x2 = util.ensure_arraylike("jnp.linalg.outer", x1, x2)
    for i, x in enumerate((x1, x2)):
        if len(util.shape_of(x)) != 1:
            raise ValueError(f"jnp.linalg.outer takes 1-D arrays, got x{i + 1} of shape "
                             f"{util.shape_of(x)}")
    return linalg_products.outer(x1, x2)


def cross(x1, x2, /, *, axis: int = -1):
    """The cross product of 3-vectors along `axis`, the other axes broadcast (the array
    API's form: only 3-vectors, unlike `jnp.cross`).

    Args:
        x1: an array with size 3 along `axis`.
        x2: an array with size 3 along `axis`.
        axis: the vector axis.

    Returns:
        The cross products.

    Raises:
        ValueError: a vector axis whose size is not 3.

    Examples:
        >>> jnp.linalg.cross(jnp.array([1, 0, 0]), jnp.array([0, 1, 0]))
        Array([0, 0, 1], dtype=int32)
    """
    x1, x2 = util.promote_args("jnp.linalg.cross", x1, x2)
    s1, s2 = util.shape_of(x1), util.shape_of(x2)
    if not s1 or not s2:
        raise ValueError(f"jnp.linalg.cross takes arrays of 3-vectors, got shapes {s1} and {s2}")
    a1, a2 = (util.canonicalize_axis(axis, len(s), IndexError) for s in (s1, s2))  # JAX's
    if s1[a1] != 3 or s2[a2] != 3:
        raise ValueError(f"jnp.linalg.cross needs 3-vectors along axis {axis}; got sizes "
                         f"{s1[a1]} (x1 of shape {s1}) and {s2[a2]} (x2 of shape {s2})")
    x1 = shape_ops.moveaxis(x1, a1, -1)
    x2 = shape_ops.moveaxis(x2, a2, -1)

    def component(x, i):
        return lax.index_in_dim(x, i, get_aval(x).ndim - 1, keepdims=False)
    (a0, a1_, a2_), (b0, b1, b2) = ([component(x, i) for i in range(3)] for x in (x1, x2))
    parts = [ufuncs.subtract(ufuncs.multiply(a1_, b2), ufuncs.multiply(a2_, b1)),
             ufuncs.subtract(ufuncs.multiply(a2_, b0), ufuncs.multiply(a0, b2)),
             ufuncs.subtract(ufuncs.multiply(a0, b1), ufuncs.multiply(a1_, b0))]
    return shape_ops.moveaxis(shape_ops.stack(parts, axis=-1), -1, axis)


def trace(x, /, *, offset: int = 0, dtype=None):
    """The sum of the `offset` diagonal of each matrix over the last two axes (the array
    API's form of `jnp.trace`).

    Args:
        x: `(..., m, n)` matrices.
        offset: the diagonal.
        dtype: the dtype to sum in.

    Returns:
        `(...)` traces.

    Examples:
        >>> jnp.linalg.trace(jnp.arange(4).reshape(2, 2))
        Array(3, dtype=int32)
    """
    return shape_ops.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def diagonal(x, /, *, offset: int = 0):
    """The `offset` diagonal of each matrix over the last two axes (the array API's
    form of `jnp.diagonal`).

    Args:
        x: `(..., m, n)` matrices.
        offset: the diagonal (0 the main one, positive above it).

    Returns:
        `(..., k)` diagonals.

    Examples:
        >>> jnp.linalg.diagonal(jnp.arange(4).reshape(2, 2))
        Array([0, 3], dtype=int32)
    """
    return shape_ops.diagonal(x, offset=offset, axis1=-2, axis2=-1)


matrix_transpose = ufuncs.matrix_transpose  # the array API's, the same function


def multi_dot(arrays, *, precision=None):
    """The product of a chain of matrices (the first and last may be vectors), computed
    in the order of multiplication that costs the fewest flops.

    Follows `numpy.linalg.multi_dot`; the order is chosen by dynamic programming over
    the (static) shapes.

    Args:
        arrays: a sequence of 2-D arrays; the first and last may be 1-D.
        precision: None, a `lax.Precision`, or a pair of them, for each product.

    Returns:
        The product.

    Examples:
        >>> jnp.linalg.multi_dot([jnp.ones((2, 3)), jnp.ones((3, 4)), jnp.ones(4)])
        Array([12., 12.], dtype=float32)
    """
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError(f"jnp.linalg.multi_dot needs at least two arrays, got {len(arrays)}")
    util.check_arraylike("jnp.linalg.multi_dot", *arrays)
    arrays = util.promote_dtypes(*map(util.operand, arrays))
    first_vector = len(util.shape_of(arrays[0])) == 1
    last_vector = len(util.shape_of(arrays[-1])) == 1
    if first_vector:
        arrays[0] = lax.expand_dims(arrays[0], (0,))
    if last_vector:
        arrays[-1] = lax.expand_dims(arrays[-1], (1,))
    shapes = [util.shape_of(a) for a in arrays]
    if any(len(s) != 2 for s in shapes):
        raise ValueError(f"jnp.linalg.multi_dot needs 2-D arrays (the first and last may be "
                         f"1-D), got shapes {shapes}")
    for left, right in zip(shapes, shapes[1:]):
        if left[1] != right[0]:
            raise ValueError(f"jnp.linalg.multi_dot: shapes {left} and {right} do not chain")
    out = _chain(arrays, _best_split([s[0] for s in shapes] + [shapes[-1][1]]), 0,
                 len(arrays) - 1, precision)
    if first_vector:
        out = lax.squeeze(out, (0,))
    if last_vector:
        out = lax.squeeze(out, (get_aval(out).ndim - 1,))
    return out


def _best_split(dims: list[int]) -> dict[tuple[int, int], int]:
    """For the chain of matrices dims[i] x dims[i+1]: where the cheapest product of
    matrices i..j splits."""
    n = len(dims) - 1
    cost = {(i, i): 0 for i in range(n)}
    split = {}
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i, j], split[i, j] = min(
                (cost[i, k] + cost[k + 1, j] + dims[i] * dims[k + 1] * dims[j + 1], k)
                for k in range(i, j))
    return split


def _chain(arrays, split, i: int, j: int, precision):
    if i == j:
        return arrays[i]
    k = split[i, j]
    return linalg_products.matmul(_chain(arrays, split, i, k, precision),
                                  _chain(arrays, split, k + 1, j, precision),
                                  precision=precision)

