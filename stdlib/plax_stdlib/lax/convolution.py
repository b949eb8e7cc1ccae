"""Convolutions: the primitive `conv_general_dilated` (lowered to
`stablehlo.convolution`) with its rules, and `lax.conv`, `conv_with_general_padding`,
`conv_transpose`, `conv_general_dilated_patches` and the dimension-number helpers.

Dimension numbers say where the batch (`N`), feature (`C`; `O`/`I` in the kernel)
and spatial dimensions are: `('NCHW', 'OIHW', 'NCHW')` strings, or a
`ConvDimensionNumbers` of three permutations listing (batch, feature, spatial...)
positions of the lhs, (out feature, in feature, spatial...) of the rhs, and
(batch, feature, spatial...) of the output. The rules below speak of these
canonical orders.

Differentiation: the convolution is bilinear. Its lhs transpose is a convolution of
the cotangent, dilated by the strides, with the spatially reversed kernel (its
feature dimensions swapped); its rhs transpose convolves the lhs with the cotangent,
exchanging the roles of batch and feature. Feature groups of one become batch groups
of the other.
"""
from __future__ import annotations

import math
import operator
from typing import NamedTuple, Sequence

import numpy as np

from plax.extend import dtypes
from plax.extend.ad import defjvp, is_undefined_primal
from plax.extend.batching import not_mapped
from plax.extend.constructors import (
    NUMBER,
    check_dtype,
    check_same_dtypes,
    describe,
    kind_of,
    standard_primitive,
    weak_result,
)
from plax.extend.core import ShapedArray, get_aval
from plax.extend.mlir import hlo, ir, mu
from plax_stdlib.lax import conversion, creation, shape_ops
from plax_stdlib.lax.comparison import eq
from plax_stdlib.lax.elementwise import add, complex, imag, real, sub
from plax_stdlib.lax.linalg.matrices import lower_function
from plax_stdlib.lax.dot_general import (
    Precision,
    canonicalize_precision,
    check_preferred_element_type,
    precision_config,
)
from plax_stdlib.lax.out_sharding import (check_out_sharding, cotangent_sharding,
                                           with_folded_batch)
from plax_stdlib.lax.windows import (
    Window,
    dilate_dim,
    dilate_shape,
    normalize_padding,
    padding_tensor,
    padtype_to_pads,
    stride_dim,
    transpose_padding,
)


class ConvDimensionNumbers(NamedTuple):
    """The layouts of a convolution as dimension indices: where batch, feature and
    spatial dimensions are in the input (`lhs_spec`), the kernel (`rhs_spec`:
    out feature, in feature, spatial) and the output (`out_spec`).

    Usually made from strings by `conv_dimension_numbers`.

    Attributes:
        lhs_spec: (batch, feature, spatial...) positions in the input.
        rhs_spec: (out feature, in feature, spatial...) positions in the kernel.
        out_spec: (batch, feature, spatial...) positions in the output.

    Examples:
        >>> from plax import lax
        >>> dn = lax.ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1),
        ...                               out_spec=(0, 3, 1, 2))  # NHWC, HWIO, NHWC
        >>> dn == lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
        True
    """
    lhs_spec: Sequence[int]
    rhs_spec: Sequence[int]
    out_spec: Sequence[int]


def conv_general_permutations(dimension_numbers):
    """The permutations that bring each of a convolution's three layouts, given as
    strings, to the canonical order (batch/out-feature, feature, spatial...).

    Spatial dimensions are ordered as they appear in the kernel's string.

    Args:
        dimension_numbers: three layout strings, e.g. `("NHWC", "HWIO", "NHWC")`.

    Returns:
        `(lhs_perm, rhs_perm, out_perm)`, tuples of dimension indices.

    Raises:
        TypeError: the strings name different dimensions or lack batch and
            feature letters.

    Examples:
        >>> from plax import lax
        >>> lax.conv_general_permutations(("NHWC", "HWIO", "NHWC"))
        ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    """
    rhs_spec = dimension_numbers[1]
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (a, b) in enumerate(pairs):
        spec = dimension_numbers[i]
        if not spec.count(a) == spec.count(b) == 1:
            raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                            f"'{a}' and '{b}' exactly once, got {spec}.")
        if len(spec) != len(set(spec)):
            raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate "
                            f"characters, got {spec}.")
    spatial = [set(spec) - set(pair) for spec, pair in zip(dimension_numbers, pairs)]
    if not spatial[0] == spatial[1] == spatial[2]:
        raise TypeError("convolution dimension_numbers elements must each have the same set "
                        f"of spatial characters, got {tuple(dimension_numbers)}.")

    def permutation(spec, pair):
        rest = sorted((i for i, c in enumerate(spec) if c not in pair),
                      key=lambda i: rhs_spec.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1]), *rest)

    return tuple(permutation(spec, pair) for spec, pair in zip(dimension_numbers, pairs))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """Converts a convolution's layout description to a `ConvDimensionNumbers`.

    Args:
        lhs_shape: the input's shape.
        rhs_shape: the kernel's shape.
        dimension_numbers: None (`("NC...", "OI...", "NC...")`), three layout
            strings such as `("NHWC", "HWIO", "NHWC")`, or a
            `ConvDimensionNumbers` (returned as is).

    Returns:
        A `ConvDimensionNumbers` of dimension indices: `(batch, feature,
        spatial...)` for the input and output, `(out feature, in feature,
        spatial...)` for the kernel.

    Raises:
        TypeError: the strings' lengths differ from the shapes' ranks.

    Examples:
        >>> from plax import lax
        >>> lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
        ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return ConvDimensionNumbers(*(tuple(map(operator.index, s)) for s in dimension_numbers))
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got "
                        f"{len(lhs_shape)} and {len(rhs_shape)}.")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (list, tuple)):
        raise TypeError("convolution dimension_numbers must be tuple/list or None, got "
                        f"{type(dimension_numbers)}.")
    if len(dimension_numbers) != 3:
        raise TypeError("convolution dimension_numbers list/tuple must be length 3, got "
                        f"{len(dimension_numbers)}.")
    if not all(isinstance(s, str) for s in dimension_numbers):
        raise TypeError("convolution dimension_numbers elements must be strings, got "
                        f"{tuple(map(type, dimension_numbers))}.")
    for i, spec in enumerate(dimension_numbers):
        if len(spec) != len(lhs_shape):
            raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the "
                            f"ndim of lhs and rhs, got {len(spec)} for lhs and rhs shapes "
                            f"{tuple(lhs_shape)} and {tuple(rhs_shape)}.")
    return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count: int = 1):
    """The output shape of a convolution, all shapes in the canonical order (batch
    or out-feature first, then feature, then spatial), without dilation.

    Args:
        lhs_shape: the input's shape (N, C, spatial...).
        rhs_shape: the kernel's shape (O, I, window...).
        strides: the stride per spatial dimension.
        pads: `(low, high)` pairs, or a padding name.
        batch_group_count: the batch groups.

    Returns:
        The output shape, a tuple (N, O, spatial...).

    Examples:
        >>> from plax import lax
        >>> lax.conv_shape_tuple((8, 3, 32, 32), (16, 3, 3, 3), (2, 2), "SAME")
        (8, 16, 16, 16)
    """
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                        f"{len(lhs_shape) - 2}, got {len(pads)}.")
    padded = [d + lo + hi for d, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(p < 0 for p in padded):
        raise ValueError("Negative padding is larger than the size of the corresponding "
                         f"dimension: got padding={tuple(pads)} for lhs_shape[2:]="
                         f"{tuple(lhs_shape[2:])}")
    spatial = tuple(stride_dim(p, k, s) for p, k, s in zip(padded, rhs_shape[2:], strides))
    return (lhs_shape[0] // batch_group_count, rhs_shape[0]) + spatial


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                             dimension_numbers):
    """The output shape of a general convolution, in the output's own layout.

    Args:
        lhs_shape: the input's shape.
        rhs_shape: the kernel's shape.
        window_strides: the stride per spatial dimension.
        padding: `(low, high)` pairs, or a padding name.
        dimension_numbers: the layouts (a `ConvDimensionNumbers` or strings).

    Returns:
        The output's shape, a tuple.

    Examples:
        >>> from plax import lax
        >>> lax.conv_general_shape_tuple((1, 8, 8, 3), (3, 3, 3, 16), (1, 1), "SAME",
        ...                              ("NHWC", "HWIO", "NHWC"))
        (1, 8, 8, 16)
    """
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    out = conv_shape_tuple(np.take(lhs_shape, lhs_perm), np.take(rhs_shape, rhs_perm),
                           window_strides, padding)
    return tuple(int(d) for d in np.take(out, np.argsort(out_perm)))


def _conv_transpose_padding(k: int, s: int, padding) -> tuple[int, int]:
    """The padding of the fractionally strided convolution that `conv_transpose`
    computes, from the forward convolution's padding (Keras's conventions)."""
    if padding == "SAME":
        total = k + s - 2
        before = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        before = k - 1
    elif isinstance(padding, tuple):
        before, after = (k - p - 1 for p in padding)
        total = before + after
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return before, total - before


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers):
    """The output shape of `conv_transpose`, in the output's own layout.

    Args:
        lhs_shape: the input's shape.
        rhs_shape: the kernel's shape.
        window_strides: the upsampling factor per spatial dimension.
        padding: `"SAME"`, `"VALID"`, or `(low, high)` pairs.
        dimension_numbers: the layouts (a `ConvDimensionNumbers` or strings).

    Returns:
        The output's shape, a tuple.

    Examples:
        >>> from plax import lax
        >>> lax.conv_transpose_shape_tuple((1, 3, 3, 1), (2, 2, 1, 1), (2, 2), "SAME",
        ...                                ("NHWC", "HWIO", "NHWC"))
        (1, 6, 6, 1)
    """
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    lhs_t, rhs_t = np.take(lhs_shape, lhs_perm), np.take(rhs_shape, rhs_perm)
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(k, s, padding)
                   for k, s in zip(rhs_t[2:], window_strides)]
    spatial = [(i - 1) * s - k + 2 + lo + hi for i, k, s, (lo, hi)
               in zip(lhs_t[2:], rhs_t[2:], window_strides, padding)]
    out = (lhs_t[0], rhs_t[0], *spatial)
    return tuple(int(d) for d in np.take(out, np.argsort(out_perm)))


# --- the primitive --------------------------------------------------------------------------

def _canonical(shape, spec) -> tuple[int, ...]:
    return tuple(shape[d] for d in spec)


def _conv_shape(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count, batch_group_count) -> tuple[int, ...]:
    name = "conv_general_dilated"
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    if lhs.ndim != rhs.ndim:
        raise ValueError(f"{name} lhs and rhs must have the same number of dimensions, but "
                         f"got {describe(lhs)} and {describe(rhs)}.")
    for what, spec in zip(("lhs", "rhs", "out"), dimension_numbers):
        if sorted(spec) != list(range(lhs.ndim)):
            raise ValueError(f"{name}: dimension_numbers {what}_spec {tuple(spec)} is not a "
                             f"permutation of the {lhs.ndim} dimensions")
    n_spatial = lhs.ndim - 2
    for what, values in (("window_strides", window_strides), ("padding", padding),
                         ("lhs_dilation", lhs_dilation), ("rhs_dilation", rhs_dilation)):
        if len(values) != n_spatial:
            raise ValueError(f"{name} {what} {tuple(values)} must have one entry per spatial "
                             f"dimension ({n_spatial}) of lhs {describe(lhs)}")
    for what, values in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                         ("rhs_dilation", rhs_dilation)):
        if any(v < 1 for v in values):
            raise ValueError(f"{name} {what} must be positive, got {tuple(values)}")
    (n, c, *lhs_sp), (o, i, *rhs_sp) = _canonical(lhs.shape, lhs_spec), _canonical(
        rhs.shape, rhs_spec)
    fgc, bgc = feature_group_count, batch_group_count
    if fgc < 1 or bgc < 1:
        raise ValueError(f"{name} feature_group_count and batch_group_count must be positive "
                         f"integers, got {fgc} and {bgc}.")
    if fgc > 1 and bgc > 1:
        raise ValueError("At most one of batch_group_count and feature_group_count may be > "
                         f"1, got batch_group_count={bgc} and feature_group_count={fgc}")
    if c % fgc:
        raise ValueError(f"{name} feature_group_count must divide lhs feature dimension "
                         f"size, but {fgc} does not divide {c}.")
    if c // fgc != i:
        raise ValueError(f"{name} lhs feature dimension size divided by feature_group_count "
                         f"must equal the rhs input feature dimension size, but {c} // {fgc} "
                         f"!= {i} (lhs {describe(lhs)}, rhs {describe(rhs)}).")
    if o % fgc or o % bgc:
        raise ValueError(f"{name} rhs output feature dimension size must be a multiple of "
                         f"feature_group_count and batch_group_count, but {o} is not a "
                         f"multiple of {max(fgc, bgc)}.")
    if n % bgc:
        raise ValueError(f"{name} batch_group_count must divide lhs batch dimension size, "
                         f"but {bgc} does not divide {n}.")
    padded = [lo + dilate_dim(d, r) + hi for d, r, (lo, hi) in zip(lhs_sp, lhs_dilation,
                                                                   padding)]
    if any(p < 0 for p in padded):
        raise ValueError(f"{name}: negative padding {tuple(padding)} removes more than the "
                         f"lhs has (lhs {describe(lhs)})")
    spatial = [stride_dim(p, dilate_dim(k, r), s) for p, k, r, s
               in zip(padded, rhs_sp, rhs_dilation, window_strides)]
    canonical_out = (n // bgc, o, *spatial)
    shape = [0] * lhs.ndim
    for d, size in zip(out_spec, canonical_out):
        shape[d] = size
    return tuple(shape)


def _abstract_eval(lhs, rhs, *, precision, preferred_element_type, out_sharding, **params):
    name = "conv_general_dilated"
    check_dtype(name, lhs, NUMBER)
    check_same_dtypes(name, lhs, rhs)
    dtype = check_preferred_element_type(name, lhs, preferred_element_type)
    weak = preferred_element_type is None and weak_result((lhs, rhs), dtype)
    return ShapedArray(_conv_shape(lhs, rhs, **params), dtype, weak)


def _lower(ctx, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
           dimension_numbers, feature_group_count, batch_group_count, precision,
           preferred_element_type, out_sharding):
    lhs_aval, rhs_aval = ctx.avals_in
    out = ctx.avals_out[0]
    if kind_of(out.dtype) != kind_of(lhs_aval.dtype):  # integers accumulated as floats
        lhs = mu.convert(lhs, lhs_aval, lhs_aval.update(dtype=out.dtype))
        rhs = mu.convert(rhs, rhs_aval, rhs_aval.update(dtype=out.dtype))
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    dnums = hlo.ConvDimensionNumbers.get(
        input_batch_dimension=lhs_spec[0], input_feature_dimension=lhs_spec[1],
        input_spatial_dimensions=list(lhs_spec[2:]),
        kernel_output_feature_dimension=rhs_spec[0],
        kernel_input_feature_dimension=rhs_spec[1],
        kernel_spatial_dimensions=list(rhs_spec[2:]),
        output_batch_dimension=out_spec[0], output_feature_dimension=out_spec[1],
        output_spatial_dimensions=list(out_spec[2:]))
    config = precision_config(precision)  # a dot algorithm is ignored, as in JAX
    n_spatial = len(window_strides)
    windows = dict(window_strides=list(window_strides), lhs_dilation=list(lhs_dilation),
                   rhs_dilation=list(rhs_dilation), window_reversal=[False] * n_spatial,
                   precision_config=config)
    flat_padding = [p for pair in padding for p in pair]
    if not mu.is_static(flat_padding):  # shape-polymorphic export: SAME on a symbolic size
        return hlo.dynamic_conv(mu.ir_type(out), lhs, rhs, padding_tensor(padding), dnums,
                                feature_group_count, batch_group_count, **windows)
    return hlo.convolution(
        mu.ir_type(out), lhs, rhs, dimension_numbers=dnums,
        feature_group_count=feature_group_count, batch_group_count=batch_group_count,
        padding=ir.DenseIntElementsAttr.get(np.asarray(padding, np.int64).reshape(n_spatial, 2)),
        **windows)


# --- moving groups and batches between dimensions --------------------------------------------

def _merge_into(x, src: int, dst: int):
    """`x` with axis `src` merged, as the major part, into axis `dst` (numbered once
    `src` is removed)."""
    shape = list(get_aval(x).shape)
    perm = [d for d in range(len(shape)) if d != src]
    perm.insert(dst, src)
    size = shape.pop(src)
    shape[dst] *= size
    return shape_ops.reshape(shape_ops.transpose(x, perm), tuple(shape))


def _split(x, axis: int, major: int):
    """`x` with axis `axis` split into `(major, rest)`."""
    shape = list(get_aval(x).shape)
    shape[axis:axis + 1] = [major, shape[axis] // major]
    return shape_ops.reshape(x, tuple(shape))


def _merge_inside_groups(x, src: int, dst: int, groups: int):
    """`x` with axis `src` merged into axis `dst` (numbered without `src`), which holds
    `groups` groups: each group grows by the factor `src`, `(groups, src, rest)`."""
    if groups == 1:
        return _merge_into(x, src, dst)
    at = dst + (dst >= src)
    x = _split(x, at, groups)
    src += src > at
    at -= src < at
    x = _merge_into(x, src, at + 1)
    return _merge_into(x, at, at)


def _split_inside_groups(x, axis: int, size: int, groups: int):
    """Undo `_merge_inside_groups`: axis `axis`, `(groups, size, rest)`, becomes
    `size` at `axis` and `(groups, rest)` at `axis + 1`."""
    x = _split(_split(x, axis, groups), axis + 1, size)
    return _merge_into(shape_ops.transpose(x, _swap(get_aval(x).ndim, axis, axis + 1)),
                       axis + 1, axis + 1)


def _swap(ndim: int, a: int, b: int) -> list[int]:
    perm = list(range(ndim))
    perm[a], perm[b] = b, a
    return perm


# --- differentiation ------------------------------------------------------------------------

def _as_dtype(x, dtype):
    return x if get_aval(x).dtype == dtype else conversion.convert_element_type(x, dtype)


def _transpose_lhs(ct, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count, precision,
                   preferred_element_type, out_sharding):
    """`ct` dilated by the strides, convolved with the reversed kernel whose feature
    dimensions trade places (groups move from its output to its input features)."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    groups = max(feature_group_count, batch_group_count)
    kernel = rhs
    if groups > 1:
        kernel = _merge_into(_split(kernel, rhs_spec[0], groups), rhs_spec[0], rhs_spec[1])
    kernel = shape_ops.rev(kernel, tuple(rhs_spec[2:]))
    window = Window(_canonical(get_aval(rhs).shape, rhs_spec)[2:], tuple(window_strides),
                    tuple(padding), tuple(lhs_dilation), tuple(rhs_dilation))
    pads = transpose_padding(_canonical(lhs.aval.shape, lhs_spec)[2:], window,
                             _canonical(get_aval(ct).shape, out_spec)[2:])
    out = conv_general_dilated_p.bind(
        ct, _as_dtype(kernel, get_aval(ct).dtype), window_strides=tuple(lhs_dilation),
        padding=tuple(pads), lhs_dilation=tuple(window_strides),
        rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=ConvDimensionNumbers(out_spec, (rhs_spec[1], rhs_spec[0],
                                                          *rhs_spec[2:]), lhs_spec),
        feature_group_count=groups, batch_group_count=1, precision=precision,
        preferred_element_type=None, out_sharding=cotangent_sharding(lhs.aval, ct, rhs))
    if batch_group_count > 1:  # the groups come out as features: back into the batch
        out = _merge_into(_split(out, lhs_spec[1], batch_group_count), lhs_spec[1],
                          lhs_spec[0])
    return _as_dtype(out, lhs.aval.dtype)


def _transpose_rhs(ct, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count, precision,
                   preferred_element_type, out_sharding):
    """The lhs convolved with `ct`, batch and feature exchanged: windows step by the
    kernel's dilation and read `ct` dilated by the strides."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    rhs_shape = rhs.aval.shape
    ct_shape = get_aval(ct).shape
    if 0 in ct_shape:
        return creation.full(rhs_shape, np.zeros((), rhs.aval.dtype)[()])
    lhs_sp = _canonical(get_aval(lhs).shape, lhs_spec)[2:]
    rhs_sp = _canonical(rhs_shape, rhs_spec)[2:]
    ct_sp = _canonical(ct_shape, out_spec)[2:]
    pads = [(lo, dilate_dim(y, s) - dilate_dim(x, ld) + dilate_dim(k, r) - lo - 1)
            for (lo, _), x, k, y, s, ld, r in zip(padding, lhs_sp, rhs_sp, ct_sp,
                                                   window_strides, lhs_dilation, rhs_dilation)]
    trans = ConvDimensionNumbers((lhs_spec[1], lhs_spec[0], *lhs_spec[2:]),
                                 (out_spec[1], out_spec[0], *out_spec[2:]),
                                 (rhs_spec[1], rhs_spec[0], *rhs_spec[2:]))
    out = conv_general_dilated_p.bind(
        _as_dtype(lhs, get_aval(ct).dtype), ct, window_strides=tuple(rhs_dilation),
        padding=tuple(pads), lhs_dilation=tuple(lhs_dilation),
        rhs_dilation=tuple(window_strides), dimension_numbers=trans,
        feature_group_count=batch_group_count, batch_group_count=feature_group_count,
        precision=precision, preferred_element_type=None,
        out_sharding=cotangent_sharding(rhs.aval, ct, lhs))
    return _as_dtype(out, rhs.aval.dtype)


def _transpose(ct, lhs, rhs, **params):
    return [_transpose_lhs(ct, lhs, rhs, **params) if is_undefined_primal(lhs) else None,
            _transpose_rhs(ct, lhs, rhs, **params) if is_undefined_primal(rhs) else None]


# --- batching ---------------------------------------------------------------------------

def _gauss_lower(ctx, lhs, rhs, **params):
    """On CPU and GPU, as JAX lowers it there (XLA's complex convolution is a slow
    loop on the CPU and missing on GPUs): a complex convolution from three real ones by
    Gauss's trick, so its values are JAX's to the last bit."""
    if not dtypes.issubdtype(ctx.avals_in[0].dtype, np.complexfloating):
        return _lower(ctx, lhs, rhs, **params)
    return lower_function(ctx, _gauss_product, ctx.avals_in, lhs, rhs, **params)


def _gauss_product(lhs, rhs, *, preferred_element_type, **params):
    """With lhs = a + ib and rhs = c + id: (a + b)c - b(c + d) + i((a + b)c + a(d - c))."""
    if preferred_element_type is not None:
        preferred_element_type = dtypes.finfo(preferred_element_type).dtype

    def conv(x, y):
        return conv_general_dilated_p.bind(x, y, preferred_element_type=preferred_element_type,
                                           **params)
    a, b, c, d = real(lhs), imag(lhs), real(rhs), imag(rhs)
    common = conv(add(a, b), c)
    return complex(sub(common, conv(b, add(c, d))), add(common, conv(a, sub(d, c))))


def _batching(axis_data, args, dims, **original):
    """The batch dimension folded into one the convolution already maps over: with
    both operands batched, into feature groups (or batch groups); with the lhs alone,
    into its batch inside each batch group; with the kernel alone, into its output
    features inside each group."""
    (lhs, rhs), (ld, rd) = args, dims
    lhs_spec, rhs_spec, out_spec = original["dimension_numbers"]
    fgc, bgc = original["feature_group_count"], original["batch_group_count"]
    size = axis_data.size
    params = {**original, "out_sharding": None}

    def into(out_dim: int) -> dict:
        """The parameters of the convolution that computes the batch folded into its
        result dimension `out_dim` (which the vmapped axis's mesh axes then split)."""
        return {**params, "out_sharding": with_folded_batch(
            "conv_general_dilated", original["out_sharding"], out_dim, axis_data)}
    if size == 0:
        lhs_aval, rhs_aval = (ShapedArray(tuple(d for i, d in enumerate(get_aval(x).shape)
                                                if i != dim), get_aval(x).dtype)
                              if dim is not not_mapped else get_aval(x)
                              for x, dim in zip(args, dims))
        aval = _abstract_eval(lhs_aval, rhs_aval, **params)
        return creation.full((0, *aval.shape), np.zeros((), aval.dtype)[()]), 0
    if ld is not not_mapped and rd is not not_mapped:
        if bgc > 1:
            lhs = _merge_into(lhs, ld, lhs_spec[0])
            params = {**params, "batch_group_count": bgc * size}
        else:
            lhs = _merge_into(lhs, ld, lhs_spec[1])
            params = {**params, "feature_group_count": fgc * size}
        out = conv_general_dilated_p.bind(lhs, _merge_into(rhs, rd, rhs_spec[0]),
                                          **into(out_spec[1]))
        return _split(out, out_spec[1], size), out_spec[1]
    if ld is not not_mapped:
        lhs = _merge_inside_groups(lhs, ld, lhs_spec[0], bgc)
        out = conv_general_dilated_p.bind(lhs, rhs, **into(out_spec[0]))
        return _split(out, out_spec[0], size), out_spec[0]
    groups = max(fgc, bgc)
    rhs = _merge_inside_groups(rhs, rd, rhs_spec[0], groups)
    out = conv_general_dilated_p.bind(lhs, rhs, **into(out_spec[1]))
    return _split_inside_groups(out, out_spec[1], size, groups), out_spec[1]


def _jvp_lhs(g, ans, lhs, rhs, **params):
    return conv_general_dilated_p.bind(g, rhs, **params)


def _jvp_rhs(g, ans, lhs, rhs, **params):
    return conv_general_dilated_p.bind(lhs, g, **params)


conv_general_dilated_p = standard_primitive(
    "lax.conv_general_dilated", _abstract_eval, _lower, jvp=defjvp(_jvp_lhs, _jvp_rhs),
    transpose=_transpose, batching=_batching)
for _platform in ("cpu", "cuda", "rocm"):
    conv_general_dilated_p.def_lowering(_gauss_lower, platform=_platform)


# --- the lax functions -------------------------------------------------------------------

def _positive_ints(name: str, what: str, values, n: int) -> tuple[int, ...]:
    try:
        ints = tuple(operator.index(v) for v in values)
    except TypeError:
        raise TypeError(f"{name}: {what} must be a sequence of ints, got {values!r}") from None
    if len(ints) != n:
        raise ValueError(f"{name}: {what} {ints} must have one entry per spatial dimension "
                         f"({n})")
    return ints


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None,
                         out_sharding=None):
    """General n-dimensional convolution (strictly, cross-correlation, as in deep
    learning libraries): strides, padding, input and kernel dilation, feature
    and batch groups, any dimension layout.

    Args:
        lhs: the input, e.g. of shape (N, C, H, W) in the default layout.
        rhs: the kernel, e.g. (O, I, kH, kW) (I = C / feature_group_count).
        window_strides: the stride in each spatial dimension.
        padding: `"VALID"`, `"SAME"`, `"SAME_LOWER"` or a `(low, high)` pair
            per spatial dimension.
        lhs_dilation: the input's dilation per spatial dimension (a transposed
            convolution).
        rhs_dilation: the kernel's dilation (an atrous convolution).
        dimension_numbers: the layouts, e.g. `("NHWC", "HWIO", "NHWC")`, or a
            `ConvDimensionNumbers`; None means `("NC...", "OI...", "NC...")`.
        feature_group_count: split the features into groups (depthwise
            convolution when equal to C).
        batch_group_count: split the batch into groups (for gradients of grouped
            convolutions).
        precision: a `lax.Precision`, a pair, or None.
        preferred_element_type: the accumulation and result dtype.
        out_sharding: on a mesh with `Explicit` axes, the result's sharding.

    Returns:
        The output, in the layout `dimension_numbers` gives for it.

    Raises:
        ValueError: the feature sizes or group counts do not fit.

    Examples:
        A 3x3 box filter over a 4x4 image (one batch, one channel):

        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> image = jnp.arange(16.0).reshape(1, 1, 4, 4)
        >>> kernel = jnp.ones((1, 1, 3, 3))
        >>> lax.conv_general_dilated(image, kernel, (1, 1), "VALID")
        Array([[[[45., 54.],
                 [81., 90.]]]], dtype=float32)
        >>> lax.conv_general_dilated(image, kernel, (1, 1), "SAME").shape
        (1, 1, 4, 4)
    """
    name = "conv_general_dilated"
    out_sharding = check_out_sharding(name, out_sharding)
    lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
    dnums = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    n = len(lhs_shape) - 2
    if n < 0:
        raise ValueError(f"{name} needs operands of rank at least 2, got shapes {lhs_shape} "
                         f"and {rhs_shape}")
    strides = _positive_ints(name, "window_strides", window_strides, n)
    lhs_dilation = (1,) * n if lhs_dilation is None else _positive_ints(
        name, "lhs_dilation", lhs_dilation, n)
    rhs_dilation = (1,) * n if rhs_dilation is None else _positive_ints(
        name, "rhs_dilation", rhs_dilation, n)
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dilation):
            raise ValueError("String padding is not implemented for transposed convolution "
                             "using this op. Please either exactly specify the required "
                             "padding or use conv_transpose.")
        kernel = dilate_shape(_canonical(rhs_shape, dnums.rhs_spec)[2:], rhs_dilation)
        pads = tuple(padtype_to_pads(_canonical(lhs_shape, dnums.lhs_spec)[2:], kernel,
                                     strides, padding))
    else:
        pads = normalize_padding(name, padding, n)
    if preferred_element_type is not None:
        preferred_element_type = dtypes.check_and_canonicalize_user_dtype(
            preferred_element_type, name)
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=strides, padding=pads, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, dimension_numbers=dnums,
        feature_group_count=operator.index(feature_group_count),
        batch_group_count=operator.index(batch_group_count),
        precision=canonicalize_precision(precision),
        preferred_element_type=preferred_element_type, out_sharding=out_sharding)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """Convolution in the NCHW/OIHW layout without dilation or groups: the simple
    form of `conv_general_dilated`.

    Args:
        lhs: the input, (N, C, spatial...).
        rhs: the kernel, (O, C, window...).
        window_strides: the stride in each spatial dimension.
        padding: `"VALID"`, `"SAME"` or `(low, high)` pairs.
        precision: a `lax.Precision`, a pair, or None.
        preferred_element_type: the accumulation and result dtype.

    Returns:
        The output, (N, O, spatial...).

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.conv(jnp.ones((1, 1, 5)), jnp.ones((1, 1, 2)), (2,), "VALID")
        Array([[[2., 2.]]], dtype=float32)
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    """Convolution in the NCHW/OIHW layout with explicit padding and dilations.

    Args:
        lhs: the input, (N, C, spatial...).
        rhs: the kernel, (O, C, window...).
        window_strides: the stride in each spatial dimension.
        padding: `"VALID"`, `"SAME"` or `(low, high)` pairs.
        lhs_dilation: the input's dilation per spatial dimension.
        rhs_dilation: the kernel's dilation per spatial dimension.
        precision: a `lax.Precision`, a pair, or None.
        preferred_element_type: the accumulation and result dtype.

    Returns:
        The output, (N, O, spatial...).

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> x = jnp.arange(5.0).reshape(1, 1, 5)
        >>> lax.conv_with_general_padding(x, jnp.ones((1, 1, 2)), (1,), [(0, 0)], (1,), (2,))
        Array([[[2., 4., 6.]]], dtype=float32)
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


_TRANSPOSE_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                      4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel: bool = False, precision=None, preferred_element_type=None,
                   use_consistent_padding: bool = False):
    """A transposed ("fractionally strided", "deconvolution") convolution, with the
    output shapes of Keras and Flax: the input is upsampled by `strides`.

    Args:
        lhs: the input, in the layout of `dimension_numbers` (default NHWC-like:
            `("NHWC", "HWIO", "NHWC")` for 2-d).
        rhs: the kernel.
        strides: the upsampling factor per spatial dimension.
        padding: `"SAME"`, `"VALID"`, or `(low, high)` pairs (the transposed
            convolution's own, unless `use_consistent_padding`).
        rhs_dilation: the kernel's dilation.
        dimension_numbers: the layouts, as for `conv_general_dilated`.
        transpose_kernel: flip the kernel spatially and swap its feature
            dimensions, giving exactly the gradient of the forward convolution.
        precision: a `lax.Precision`, a pair, or None.
        preferred_element_type: the accumulation and result dtype.
        use_consistent_padding: pairs also name the forward convolution's padding.

    Returns:
        The upsampled output.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> x = jnp.ones((1, 3, 3, 1))  # NHWC
        >>> lax.conv_transpose(x, jnp.ones((2, 2, 1, 1)), (2, 2), "SAME").shape
        (1, 6, 6, 1)
    """
    lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
    ndim = len(lhs_shape)
    if ndim != len(rhs_shape) or ndim < 2:
        raise ValueError(f"conv_transpose needs lhs and rhs of equal rank >= 2, got shapes "
                         f"{lhs_shape} and {rhs_shape}")
    if dimension_numbers is None:
        if ndim not in _TRANSPOSE_LAYOUTS:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = _TRANSPOSE_LAYOUTS[ndim]
    dnums = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    kernel = _canonical(rhs_shape, dnums.rhs_spec)[2:]
    n = ndim - 2
    rhs_dilation = (1,) * n if rhs_dilation is None else tuple(rhs_dilation)
    strides = _positive_ints("conv_transpose", "strides", strides, n)
    if use_consistent_padding or padding in ("SAME", "VALID"):
        per_dim = [padding] * n if isinstance(padding, str) else [tuple(p) for p in padding]
        pads = tuple(_conv_transpose_padding(dilate_dim(k, r), s, p)
                     for k, r, s, p in zip(kernel, rhs_dilation, strides, per_dim))
    else:
        pads = padding
    if transpose_kernel:
        rhs = shape_ops.rev(rhs, tuple(dnums.rhs_spec[2:]))
        rhs = shape_ops.transpose(rhs, _swap(ndim, dnums.rhs_spec[0], dnums.rhs_spec[1]))
    return conv_general_dilated(lhs, rhs, (1,) * n, pads, strides, rhs_dilation, dnums,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


def _patch_kernel(dtype, channels: int, filter_shape: tuple[int, ...], rhs_spec):
    """The kernel whose output feature `c * size + k` is element `k` of input feature
    `c`'s window (an identity matrix per input feature), staged from iotas as JAX's."""
    size = math.prod(filter_shape)
    rows = add(creation.broadcasted_iota(np.int32, (size, size), 0), np.int32(0))  # (JAX's eye)
    eye = conversion.convert_element_type(eq(rows, creation.broadcasted_iota(
        np.int32, (size, size), 1)), dtype)
    kernel = shape_ops.reshape(shape_ops.broadcast_in_dim(eye, (channels, size, size), (1, 2)),
                               (channels * size, 1, *filter_shape))
    if tuple(rhs_spec[:2]) == (0, 1):
        return kernel
    perm = list(range(2, len(rhs_spec)))  # the output and input features moved into place
    for dst, src in sorted(zip(rhs_spec[:2], (0, 1))):
        perm.insert(dst, src)
    return shape_ops.transpose(kernel, perm)


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None,
                                 rhs_dilation=None, dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
    """Extracts the patches a convolution reads, as features (im2col): with a
    kernel of spatial shape `filter_shape`, output feature
    `c * prod(filter_shape) + k` is element `k` (row-major) of input feature
    `c`'s window.

    Args:
        lhs: the input, e.g. (N, C, H, W).
        filter_shape: the window's spatial shape.
        window_strides: the stride per spatial dimension.
        padding: `"VALID"`, `"SAME"` or `(low, high)` pairs.
        lhs_dilation: the input's dilation.
        rhs_dilation: the window's dilation.
        dimension_numbers: the layouts, as for `conv_general_dilated`.
        precision: a `lax.Precision`, or None.
        preferred_element_type: the result's dtype.

    Returns:
        An array (N, C * prod(filter_shape), out spatial...) in the default
        layout.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> x = jnp.arange(4.0).reshape(1, 1, 4)
        >>> lax.conv_general_dilated_patches(x, (2,), (1,), "VALID")
        Array([[[0., 1., 2.],
                [1., 2., 3.]]], dtype=float32)
    """
    lhs_shape = get_aval(lhs).shape
    filter_shape = tuple(filter_shape)
    n = len(filter_shape)
    if len(lhs_shape) != n + 2:
        raise ValueError(f"conv_general_dilated_patches: filter_shape {filter_shape} needs an "
                         f"lhs of rank {n + 2}, got shape {lhs_shape}")
    dnums = conv_dimension_numbers(lhs_shape, (1, 1) + filter_shape, dimension_numbers)
    channels = lhs_shape[dnums.lhs_spec[1]]
    kernel = _patch_kernel(get_aval(lhs).dtype, channels, filter_shape, dnums.rhs_spec)
    return conv_general_dilated(lhs, kernel, window_strides, padding, lhs_dilation,
                                rhs_dilation, dnums, feature_group_count=channels,
                                precision=None if precision is None else (precision,
                                                                          Precision.DEFAULT),
                                preferred_element_type=preferred_element_type)
