"""Products: dot, matmul (`@`), vdot, inner, outer, tensordot and einsum.

Each is one `lax.dot_general` per contraction. dot_general puts batch dimensions
first, then the left operand's free dimensions, then the right one's, so
products come out in NumPy's order without transposes; einsum transposes only
its final result, and only when the requested order differs.
"""
from __future__ import annotations

import math
import operator

import numpy as np
import opt_einsum

from plax.extend import dtypes
from plax_stdlib import jax_jits, lax
from plax_stdlib.lax.dot_general import canonicalize_precision
from plax_stdlib.lax.out_sharding import laid_out
from plax_stdlib.numpy import ufuncs, util


def _dot_general(a, b, contract, batch, precision, preferred_element_type,
                 out_sharding=None):
    """dot_general on promoted operands; bool products are logical (or of ands)."""
    dims = (tuple(contract[0]), tuple(contract[1])), (tuple(batch[0]), tuple(batch[1]))
    if util.dtype_of(a) == np.dtype(bool):
        int_dtype = dtypes.default_int_dtype()
        out = lax.dot_general(util.convert(a, int_dtype), util.convert(b, int_dtype), dims,
                              precision, out_sharding=out_sharding)
        out = lax.ne(out, 0)
        return out if preferred_element_type is None else util.convert(
            out, preferred_element_type)
    # the result dtype named even when it is the operands' (JAX's jnp does, so its
    # printed Jaxprs show `preferred_element_type=float32`)
    return lax.dot_general(a, b, dims, precision, preferred_element_type or util.dtype_of(a),
                           out_sharding=out_sharding)


def _promote(name: str, *args):
    util.check_arraylike(name, *args)
    return util.promote_dtypes(*map(util.operand, args))


def _preferred(preferred_element_type, name, precision=None):
    """The checked preferred dtype; a precision given is checked too, before the
    operands' shapes, as JAX's dot and matmul check it (scalar operands included)."""
    canonicalize_precision(precision)
    return util.check_user_dtype(preferred_element_type, name)


def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """NumPy's `dot`: the product of scalars, the inner product of vectors, the matrix
    product of matrices, and for N-d arrays a sum over the last axis of `a` and the
    second-to-last of `b`.

    Follows `numpy.dot`, plus JAX's `precision` and `preferred_element_type`. On
    accelerators, float32 products may use lower-precision passes by default (TPU:
    bfloat16); `precision=lax.Precision.HIGHEST` asks for full float32.

    Args:
        a: an array or scalar.
        b: an array or scalar.
        precision: None, a `lax.Precision`, or a pair of them (one per operand).
        preferred_element_type: the dtype to accumulate in and return (e.g. int32 for
            int8 inputs, float32 for bfloat16).
        out_sharding: a Sharding or PartitionSpec for the result (Explicit mesh axes).

    Returns:
        The product; its dtype is the promoted dtype of `a` and `b` unless
        `preferred_element_type` is given.

    Raises:
        TypeError: contracted dimensions that differ in size.

    Examples:
        >>> jnp.dot(jnp.array([1, 2]), jnp.array([3, 4]))
        Array(11, dtype=int32)
        >>> jnp.dot(jnp.ones((2, 3)), jnp.ones(3))
        Array([3., 3.], dtype=float32)
    """
    a, b = _promote("dot", a, b)
    preferred = _preferred(preferred_element_type, "dot", precision)
    a_ndim, b_ndim = len(util.shape_of(a)), len(util.shape_of(b))
    if out_sharding is not None and (a_ndim == 0 or b_ndim == 0):  # as JAX: no contraction
        return _dot_general(a, b, ((), ()), ((), ()), precision, preferred, out_sharding)
    if a_ndim == 0 or b_ndim == 0:  # a product (for bools a logical and, as JAX)
        out = ufuncs.multiply(a, b)
        return out if preferred is None else util.convert(out, preferred)
    b_axis = 0 if b_ndim == 1 else b_ndim - 2
    _check_contracting("dot", a, b, a_ndim - 1, b_axis)
    return _dot_general(a, b, ((a_ndim - 1,), (b_axis,)), ((), ()), precision, preferred,
                        out_sharding)


def _check_contracting(name, a, b, a_axis, b_axis):
    a_shape, b_shape = util.shape_of(a), util.shape_of(b)
    if a_shape[a_axis] != b_shape[b_axis]:
        raise TypeError(f"{name}: incompatible shapes {a_shape} and {b_shape}: axis {a_axis} "
                        f"of the first (size {a_shape[a_axis]}) does not match axis {b_axis} "
                        f"of the second (size {b_shape[b_axis]})")


def matmul(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """The matrix product `a @ b`, with NumPy's rules: 1-D operands act as a row (left)
    or column (right) vector, and leading (batch) dimensions broadcast.

    Follows `numpy.matmul`, plus JAX's `precision` and `preferred_element_type` (see
    `dot`); scalars are not allowed.

    Args:
        a: an array of at least one dimension.
        b: an array of at least one dimension.
        precision: None, a `lax.Precision`, or a pair of them.
        preferred_element_type: the dtype to accumulate in and return.
        out_sharding: a Sharding or PartitionSpec for the result (Explicit mesh axes).

    Returns:
        The product.

    Raises:
        ValueError: a scalar operand.
        TypeError: contracted dimensions that differ in size.

    Examples:
        >>> a = jnp.ones((5, 2, 3))
        >>> b = jnp.ones((3, 4))
        >>> jnp.matmul(a, b).shape
        (5, 2, 4)
        >>> jnp.matmul(jnp.array([[1, 2], [3, 4]]), jnp.array([1, 1]))
        Array([3, 7], dtype=int32)
    """
    a, b = _promote("matmul", a, b)
    preferred = _preferred(preferred_element_type, "matmul", precision)
    a_shape, b_shape = util.shape_of(a), util.shape_of(b)
    for i, shape in enumerate((a_shape, b_shape)):
        if not shape:
            raise ValueError(f"matmul: Input operand {i} does not have enough dimensions "
                             f"(has 0, requires 1)")
    a_axis = len(a_shape) - 1
    b_axis = 0 if len(b_shape) == 1 else len(b_shape) - 2
    _check_contracting("matmul", a, b, a_axis, b_axis)
    if out_sharding is None:
        return _matmul_unbroadcast(a, b, precision, preferred)
    if len(a_shape) == 1 or len(b_shape) == 1:
        # A vector has no batch dimensions: every other dimension is free.
        return _dot_general(a, b, ((a_axis,), (b_axis,)), ((), ()), precision, preferred,
                            out_sharding)
    # a typed result is one dot_general's: the operands share a broadcast batch
    try:
        batch = util.broadcast_shapes(a_shape[:-2], b_shape[:-2])
    except ValueError:
        raise ValueError(f"matmul: batch dimensions of shapes {a_shape} and {b_shape} do not "
                         "broadcast") from None
    a = _broadcast_batch(a, batch)
    b = _broadcast_batch(b, batch)
    batch_dims = tuple(range(len(batch)))
    return _dot_general(a, b, ((len(batch) + 1,), (len(batch),)), (batch_dims, batch_dims),
                        precision, preferred, out_sharding)


def _matmul_unbroadcast(a, b, precision, preferred):
    """matmul as JAX forms it: batch dimensions both operands have are dot_general's
    batch, one operand's own (or size-1 against a size) are free dimensions of the
    other, so a weight is never copied across a batch; then one transpose, if needed,
    puts the result in NumPy's order."""
    a_shape, b_shape = util.shape_of(a), util.shape_of(b)
    a_matrix, b_matrix = len(a_shape) > 1, len(b_shape) > 1
    a_batch, b_batch = a_shape[:-2] if a_matrix else (), b_shape[:-2] if b_matrix else ()
    n = max(len(a_batch), len(b_batch))
    a_batch = (None,) * (n - len(a_batch)) + tuple(a_batch)
    b_batch = (None,) * (n - len(b_batch)) + tuple(b_batch)
    squeezed = ([], [])  # size-1 batch dimensions to drop from a and b
    batch_dims = ([], [])  # dot_general's batch dimensions of the squeezed a and b
    out_batch, out_a, out_b = [], [], []  # result positions, in dot_general's order
    for i, (da, db) in enumerate(zip(a_batch, b_batch)):
        if da is None:
            out_b.append(i)
        elif db is None:
            out_a.append(i)
        elif da == 1 and db != 1:
            squeezed[0].append(len(out_batch) + len(out_a) + len(squeezed[0]))
            out_b.append(i)
        elif db == 1 and da != 1:
            squeezed[1].append(len(out_batch) + len(out_b) + len(squeezed[1]))
            out_a.append(i)
        elif da == db:
            batch_dims[0].append(len(out_batch) + len(out_a))
            batch_dims[1].append(len(out_batch) + len(out_b))
            out_batch.append(i)
        else:
            raise ValueError(f"matmul: batch dimensions of shapes {a_shape} and {b_shape} "
                             "do not broadcast")
    if a_matrix:
        out_a.append(n)
    if b_matrix:
        out_b.append(n + 1 if a_matrix else n)
    a, b = lax.squeeze(a, tuple(squeezed[0])), lax.squeeze(b, tuple(squeezed[1]))
    a_ndim, b_ndim = len(util.shape_of(a)), len(util.shape_of(b))
    out = _dot_general(a, b, ((a_ndim - 1,), (b_ndim - 2 if b_matrix else b_ndim - 1,)),
                       batch_dims, precision, preferred)
    perm = tuple(int(i) for i in np.argsort(out_batch + out_a + out_b))
    return out if perm == tuple(range(len(perm))) else lax.transpose(out, perm)


def _broadcast_batch(x, batch):
    shape = util.shape_of(x)
    target = tuple(batch) + shape[-2:]
    if shape == target:
        return x
    lead = len(target) - len(shape)
    return lax.broadcast_in_dim(x, target, tuple(range(lead, len(target))))


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """The dot product of `a` and `b` flattened, conjugating `a` when it is complex.

    Follows `numpy.vdot`, plus `precision` and `preferred_element_type` (see `dot`).

    Args:
        a: an array (conjugated if complex).
        b: an array of the same size.
        precision: None, a `lax.Precision`, or a pair of them.
        preferred_element_type: the dtype to accumulate in and return.

    Returns:
        A scalar array.

    Examples:
        >>> jnp.vdot(jnp.array([1 + 1j, 2]), jnp.array([1, 1j]))
        Array(1.+1.j, dtype=complex64)
    """
    a, b = _promote("vdot", a, b)
    if util.dtype_category(util.dtype_of(a)) == "c":
        a = lax.conj(a)
    flat = lambda x: lax.reshape(x, (math.prod(util.shape_of(x)),))
    return dot(flat(a), flat(b), precision=precision,
               preferred_element_type=preferred_element_type)


def inner(a, b, *, precision=None, preferred_element_type=None):
    """The inner product: sums of products over the last axes of `a` and `b` (for
    vectors, the dot product; for N-d arrays, every pair of last-axis vectors).

    Follows `numpy.inner`, plus `precision` and `preferred_element_type` (see `dot`).

    Args:
        a: an array or scalar.
        b: an array or scalar, whose last axis matches `a`'s.
        precision: None, a `lax.Precision`, or a pair of them.
        preferred_element_type: the dtype to accumulate in and return.

    Returns:
        An array of shape `a.shape[:-1] + b.shape[:-1]`.

    Examples:
        >>> jnp.inner(jnp.array([[1, 0], [0, 1]]), jnp.array([[1, 2], [3, 4]]))
        Array([[1, 3],
               [2, 4]], dtype=int32)
    """
    a, b = _promote("inner", a, b)
    preferred = _preferred(preferred_element_type, "inner")
    a_ndim, b_ndim = len(util.shape_of(a)), len(util.shape_of(b))
    if a_ndim == 0 or b_ndim == 0:
        out = ufuncs.multiply(a, b)
        return out if preferred is None else util.convert(out, preferred)
    _check_contracting("inner", a, b, a_ndim - 1, b_ndim - 1)
    return _dot_general(a, b, ((a_ndim - 1,), (b_ndim - 1,)), ((), ()), precision, preferred)


def outer(a, b, out=None):
    """The outer product: `ravel(a)[:, None] * ravel(b)[None, :]`.

    Follows `numpy.outer`; `out` must be None.

    Args:
        a: an array (flattened).
        b: an array (flattened).
        out: unsupported.

    Returns:
        A 2-D array of shape `(a.size, b.size)`.

    Raises:
        NotImplementedError: an `out` argument.

    Examples:
        >>> jnp.outer(jnp.array([1, 2]), jnp.array([1, 10, 100]))
        Array([[  1,  10, 100],
               [  2,  20, 200]], dtype=int32)
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to plax.numpy.outer is not supported.")
    a, b = _promote("outer", a, b)
    # JAX's ravel(a)[:, None] * ravel(b)[None] (a reshape to the same shape is no equation)
    a, b = (lax.reshape(x, (math.prod(util.shape_of(x)),)) for x in (a, b))
    a, b = lax.expand_dims(a, (1,)), lax.expand_dims(b, (0,))
    return lax.bitwise_and(a, b) if util.dtype_of(a) == np.dtype(bool) else lax.mul(a, b)


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None,
              out_sharding=None):
    """Sums of products over chosen axes: the last N axes of `a` with the first N of `b`
    for an int `axes = N`, or the axes paired by `axes = (axes_a, axes_b)`.

    Follows `numpy.tensordot`, plus `precision` and `preferred_element_type` (see
    `dot`).

    Args:
        a: an array.
        b: an array.
        axes: an int, or a pair of sequences of axes of equal length.
        precision: None, a `lax.Precision`, or a pair of them.
        preferred_element_type: the dtype to accumulate in and return.
        out_sharding: a Sharding or PartitionSpec for the result (Explicit mesh axes).

    Returns:
        An array: `a`'s free axes followed by `b`'s.

    Raises:
        TypeError: paired axes of different sizes, or a malformed `axes`.

    Examples:
        >>> jnp.tensordot(jnp.ones((2, 3, 4)), jnp.ones((3, 4, 5))).shape
        (2, 5)
        >>> jnp.tensordot(jnp.ones((2, 3)), jnp.ones((2, 5)), axes=([0], [0])).shape
        (3, 5)
    """
    a, b = _promote("tensordot", a, b)
    a_ndim, b_ndim = len(util.shape_of(a)), len(util.shape_of(b))
    if isinstance(axes, (int, np.integer)):
        n = operator.index(axes)
        if n > min(a_ndim, b_ndim):
            raise TypeError(f"tensordot: number of contracted axes must be at most "
                            f"{min(a_ndim, b_ndim)}, got {n} for shapes {util.shape_of(a)} and "
                            f"{util.shape_of(b)}")
        n = max(n, 0)  # a negative count contracts nothing, as in NumPy and JAX
        a_axes, b_axes = tuple(range(a_ndim - n, a_ndim)), tuple(range(n))
    else:
        try:
            ax_a, ax_b = axes
        except (TypeError, ValueError):
            raise TypeError(f"tensordot: axes must be an int or a pair of sequences, got "
                            f"{axes!r}") from None
        ax_a = (ax_a,) if isinstance(ax_a, (int, np.integer)) else tuple(ax_a)
        ax_b = (ax_b,) if isinstance(ax_b, (int, np.integer)) else tuple(ax_b)
        if len(ax_a) != len(ax_b):
            raise TypeError(f"tensordot: axes must name as many axes of each operand, got "
                            f"{axes!r}")
        a_axes = tuple(util.canonicalize_axis(x, a_ndim) for x in ax_a)
        b_axes = tuple(util.canonicalize_axis(x, b_ndim) for x in ax_b)
    for i, j in zip(a_axes, b_axes):
        _check_contracting("tensordot", a, b, i, j)
    return _dot_general(a, b, (a_axes, b_axes), ((), ()), precision,
                        _preferred(preferred_element_type, "tensordot"), out_sharding)


# --- einsum ----------------------------------------------------------------------------------

def _optimize_arg(optimize):
    if optimize is True:
        return "optimal"
    if optimize in (False, None):
        return False
    return optimize


def _split_einsum_args(subscripts, operands):
    """The operands, and the arguments for opt_einsum's parser with shapes in their
    place (for both `einsum('ij,jk', a, b)` and `einsum(a, [0, 1], b, [1, 2])`)."""
    if isinstance(subscripts, str):
        arrays = list(operands)
        return arrays, [subscripts, *(util.shape_of(util.operand(a)) for a in arrays)]
    args = [subscripts, *operands]
    arrays = args[0::2][:len(args) // 2]
    spec = list(args)
    for i in range(0, 2 * len(arrays), 2):
        spec[i] = util.shape_of(util.operand(args[i]))
    return arrays, spec


def einsum(subscripts, /, *operands, out=None, optimize="auto", precision=None,
           preferred_element_type=None, out_sharding=None, _dot_general=None):
    """Einstein summation: products of the operands, summed over the indices that do not
    appear in the output, as written in `subscripts` (e.g. `"ij,jk->ik"` is a matrix
    product).

    Follows `numpy.einsum` (explicit `->` output or implicit, `...` for broadcast
    dimensions), plus JAX's `precision`, `preferred_element_type` and `out_sharding`.
    With several operands, the contraction order comes from `opt_einsum`
    (`optimize`: "auto", "greedy", "optimal", False for left to right, or a path from
    `einsum_path`), and each pairwise contraction is one `lax.dot_general`. The
    operands are promoted to a common dtype first.

    Args:
        subscripts: the index string, e.g. `"bij,bjk->bik"`.
        *operands: the arrays.
        out: unsupported; must be None.
        optimize: the contraction-order strategy, or an explicit path.
        precision: None, a `lax.Precision`, or a pair of them.
        preferred_element_type: the dtype to accumulate in and return.
        out_sharding: a Sharding or PartitionSpec for the result; computed as JAX does
            (on the mesh's axes made Auto, then laid out).
        _dot_general: JAX's hook (flax's quantized and injected-dot layers use it):
            called instead of `lax.dot_general` for each pairwise contraction, as
            `_dot_general(lhs, rhs, dimension_numbers, precision,
            preferred_element_type=dtype)`.

    Returns:
        The result array.

    Raises:
        ValueError: subscripts that do not match the operands.
        NotImplementedError: an `out` argument.
        TypeError: a `_dot_general` that is not callable.

    Examples:
        >>> a = jnp.array([[1, 2], [3, 4]])
        >>> jnp.einsum("ij,jk->ik", a, a)
        Array([[ 7, 10],
               [15, 22]], dtype=int32)
        >>> jnp.einsum("ii->", a), jnp.einsum("ij->j", a)
        (Array(5, dtype=int32), Array([4, 6], dtype=int32))
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to plax.numpy.einsum is not supported.")
    if _dot_general is not None and not callable(_dot_general):
        raise TypeError(f"einsum: _dot_general must be callable, got {_dot_general!r}")
    arrays, spec = _split_einsum_args(subscripts, operands)
    util.check_arraylike("einsum", *arrays)
    arrays = util.promote_dtypes(*map(util.operand, arrays))
    preferred = _preferred(preferred_element_type, "einsum")
    dot = _injected_dot(_dot_general)
    return laid_out("plax.numpy.einsum", out_sharding,
                    lambda *arrays: _einsum(subscripts, spec, arrays, optimize, precision,
                                            preferred, dot),
                    *arrays)


def _injected_dot(user_dot):
    """A user's `dot_general` in `_dot_general`'s calling convention (or, with none
    given, plax's own)."""
    if user_dot is None:
        return _dot_general

    def dot(a, b, contract, batch, precision, preferred_element_type):
        dims = (tuple(contract[0]), tuple(contract[1])), (tuple(batch[0]), tuple(batch[1]))
        return user_dot(a, b, dims, precision,
                        preferred_element_type=preferred_element_type or util.dtype_of(a))
    return dot


def _einsum(subscripts, spec, arrays, optimize, precision, preferred, dot):
    try:
        inputs, output, _ = opt_einsum.parser.parse_einsum_input(spec, shapes=True)
        # A symbolic size (shape-polymorphic export) counts as 8 for the path's cost.
        shapes = [tuple(d if isinstance(d, int) else 8 for d in util.shape_of(a))
                  for a in arrays]
        _, contractions = opt_einsum.contract_path(
            f"{inputs}->{output}", *shapes, shapes=True, einsum_call=True,
            optimize=_optimize_arg(optimize))
    except (ValueError, TypeError) as err:
        raise ValueError(f"einsum: invalid subscripts {subscripts!r} for operand shapes "
                         f"{[util.shape_of(a) for a in arrays]}: {err}") from None
    terms = [_Term(a, labels) for a, labels in zip(arrays, inputs.split(","))]
    for term in terms:
        term.check_sizes()
    for contract_inds, removed, step_spec, *_ in contractions:
        # opt_einsum lists a step's operands last first, and `step_spec` names them and
        # the step's result in that order; taking them so (as JAX does) gives JAX's
        # dot_generals and transposes.
        step_output = step_spec.split("->")[1]
        step = [terms.pop(i) for i in contract_inds]
        result = step[0]
        for k, term in enumerate(step[1:], start=1):  # more than two: pairwise
            keep = step_output + "".join(t.labels for t in step[k + 1:])
            result = _contract(result, term, sorted(removed), keep, precision, preferred,
                               dot)
        result = result.reduced(step_output)
        if result.labels != step_output:
            result = _Term(lax.transpose(result.array, tuple(
                result.labels.index(c) for c in step_output)), step_output)
        terms.append(result)
    final = terms[0]
    out_ = final.array
    if final.labels != output:
        out_ = lax.transpose(out_, tuple(final.labels.index(c) for c in output))
    if preferred is not None:
        out_ = util.convert(out_, preferred)
    return util.as_array(out_)


class _Term:
    """An operand with one subscript label per axis."""

    def __init__(self, array, labels: str):
        self.array, self.labels = array, labels

    def size(self, label: str) -> int:
        return util.shape_of(self.array)[self.labels.index(label)]

    def check_sizes(self) -> None:
        shape = util.shape_of(self.array)
        if len(shape) != len(self.labels):
            raise ValueError(f"einsum: operand of shape {shape} has {len(self.labels)} "
                             f"subscripts {self.labels!r}")
        for label in set(self.labels):
            sizes = {d for d, c in zip(shape, self.labels) if c == label}
            if len(sizes) > 1:
                raise ValueError(f"einsum: repeated subscript {label!r} of operand "
                                 f"{self.labels!r} has different sizes {sorted(sizes)}")

    def reduced(self, keep: str) -> "_Term":
        """Repeated labels replaced by their diagonal; labels not in `keep` summed."""
        from plax_stdlib.numpy.shape_ops import diagonal
        array, labels = self.array, self.labels
        for label in set(labels):
            while labels.count(label) > 1:
                i = labels.index(label)
                j = labels.index(label, i + 1)
                array = diagonal(array, 0, i, j)
                labels = labels.replace(label, "", 2) + label
        summed = tuple(i for i, c in enumerate(labels) if c not in keep)
        if summed:
            array = _sum(array, summed)
            labels = "".join(c for i, c in enumerate(labels) if i not in summed)
        return _Term(array, labels)

    def without_unit(self, label: str) -> "_Term":
        """The term with the size-1 (broadcast) axis of `label` dropped."""
        i = self.labels.index(label)
        return _Term(lax.squeeze(self.array, (i,)), self.labels[:i] + self.labels[i + 1:])


def _sum(array, axes):
    if util.dtype_of(array) == np.dtype(bool):
        return lax.reduce_or(array, axes)
    return lax.reduce_sum(array, axes)


def _contract(lhs: _Term, rhs: _Term, removed: list, keep: str, precision, preferred,
              dot) -> _Term:
    """One pairwise contraction; labels in `keep` survive, shared ones in `removed` are
    summed. Batch labels come first, in `keep`'s order; the result's other labels are
    `rhs`'s then `lhs`'s when that is `keep`'s order (no transpose needed), else
    `lhs`'s then `rhs`'s, as JAX orders them."""
    for label in set(lhs.labels) & set(rhs.labels):
        sa, sb = lhs.size(label), rhs.size(label)
        if sa != sb:
            if sa == 1:
                lhs = lhs.without_unit(label)
            elif sb == 1:
                rhs = rhs.without_unit(label)
            else:
                raise ValueError(f"einsum: subscript {label!r} has size {sa} in one operand "
                                 f"and {sb} in another")
    lhs = lhs.reduced(keep + rhs.labels)
    rhs = rhs.reduced(keep + lhs.labels)
    batch = [c for c in keep if c in lhs.labels and c in rhs.labels]
    contracted = [c for c in removed if c in lhs.labels and c in rhs.labels]
    rest = lambda t: "".join(c for c in t.labels if c not in batch and c not in contracted)
    if "".join(batch) + rest(rhs) + rest(lhs) == keep:
        lhs, rhs = rhs, lhs
    out = dot(
        lhs.array, rhs.array,
        ([lhs.labels.index(c) for c in contracted], [rhs.labels.index(c) for c in contracted]),
        ([lhs.labels.index(c) for c in batch], [rhs.labels.index(c) for c in batch]),
        precision, preferred)
    return _Term(out, "".join(batch) + rest(lhs) + rest(rhs))


jax_jits.apply(globals())  # JAX's jitted functions become jit functions
