"""Window geometry that windowed reductions and convolutions share: padding types
('SAME', 'VALID'...), dilated and strided output shapes, the parameter checks with
JAX's errors, the padding that transposes a windowed sum, and window patches (each
window's elements laid out along a new last axis, which is how the derivatives of
generic windowed reductions see them).

A window over a dimension of size `d` with base dilation `b`, padding `(lo, hi)`,
window size `w`, window dilation `r` and stride `s` reads the input dilated to
`(d - 1) * b + 1`, padded to `lo + that + hi`, at offsets `o * s + k * r`.
"""
from __future__ import annotations

import itertools
from typing import NamedTuple, Sequence

import numpy as np

from plax.extend.core import SymbolicDimension, canonical_dim, get_aval, max_dim
from plax.extend.mlir import hlo, ir, mu
from plax_stdlib.lax import shape_ops, slicing


def dilate_dim(d: int, dilation: int) -> int:
    """The size of a dimension of size `d` with `dilation - 1` holes between elements."""
    if dilation == 1:
        return d
    return max_dim(1 + dilation * (d - 1), 0)


def dilate_shape(shape: Sequence[int], dilation: Sequence[int]) -> tuple[int, ...]:
    return tuple(dilate_dim(d, r) for d, r in zip(shape, dilation))


def stride_dim(d: int, window: int, stride: int) -> int:
    """How many windows of `window` elements fit in `d` at `stride` (0 if none)."""
    return max_dim((d - window) // stride + 1, 0)


def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int],
                    window_strides: Sequence[int], padding) -> list[tuple[int, int]]:
    """The `(low, high)` padding of each dimension that a padding name stands for.

    `"VALID"` is no padding; `"SAME"` pads so that the output has
    `ceil(in / stride)` elements, an odd total putting the extra element at
    the end; `"SAME_LOWER"` puts it at the start.

    Args:
        in_shape: the input's spatial shape.
        window_shape: the window's shape.
        window_strides: the strides.
        padding: `"VALID"`, `"SAME"` or `"SAME_LOWER"` (or a `PaddingType`).

    Returns:
        A list of `(low, high)` pairs.

    Raises:
        RuntimeError: an unknown padding name.

    Examples:
        >>> from plax import lax
        >>> lax.padtype_to_pads((5, 6), (3, 2), (1, 2), "SAME")
        [(1, 1), (0, 0)]
    """
    if not isinstance(padding, str):
        raise TypeError(f"padding must be 'VALID', 'SAME' or 'SAME_LOWER', got {padding!r}")
    kind = padding.upper()
    if kind not in ("VALID", "SAME", "SAME_LOWER"):
        raise RuntimeError("Unrecognized padding type: expected 'VALID', 'SAME', or "
                           f"'SAME_LOWER', got {padding}.")
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    pads = []
    for d, w, s in zip(in_shape, window_shape, window_strides):
        out = -(-d // s)
        total = max_dim((out - 1) * s + w - d, 0)
        small, large = total // 2, total - total // 2
        pads.append((small, large) if kind == "SAME" else (large, small))
    return pads


# --- checking and normalising window parameters --------------------------------------------

def check_shapelike(name: str, what: str, values, positive: bool = False) -> tuple[int, ...]:
    """A tuple of non-negative (or positive) ints (or symbolic sizes), else TypeError
    in JAX's words."""
    if not isinstance(values, (tuple, list, np.ndarray)):
        raise TypeError(f"{name} {what} must be of type tuple/list/ndarray, got "
                        f"{type(values)}.")
    try:
        ints = tuple(canonical_dim(v) for v in values)
    except TypeError:
        raise TypeError(f"{name} {what} must have every element be an integer type, got "
                        f"{tuple(map(type, values))}.") from None
    bound, words = (1, "strictly positive") if positive else (0, "nonnegative")
    if any(v < bound for v in ints):
        raise TypeError(f"{name} {what} must have every element be {words}, got {ints}.")
    return ints


def normalize_padding(name: str, padding, ndim: int) -> tuple[tuple[int, int], ...]:
    """Explicit `(low, high)` pairs as a tuple of int pairs; ValueError otherwise."""
    try:
        pads = tuple((canonical_dim(lo), canonical_dim(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        raise ValueError(f"padding argument to {name} should be a string or a sequence of "
                         f"(low, high) pairs, got {padding!r}") from None
    if len(pads) != ndim:
        raise TypeError(f"{name}: padding {pads} must have {ndim} (low, high) pairs, one per "
                        "window dimension")
    return pads


class Window(NamedTuple):
    """The parameters of a windowed operation, one entry per operand dimension."""
    window_dimensions: tuple[int, ...]
    window_strides: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    base_dilation: tuple[int, ...]
    window_dilation: tuple[int, ...]

    def out_shape(self, in_shape: Sequence[int]) -> tuple[int, ...]:
        padded = [lo + dilate_dim(d, b) + hi for d, b, (lo, hi)
                  in zip(in_shape, self.base_dilation, self.padding)]
        return tuple(stride_dim(p, dilate_dim(w, r), s) for p, w, r, s
                     in zip(padded, self.window_dimensions, self.window_dilation,
                            self.window_strides))

    def with_unit_dim(self, at: int) -> "Window":
        """The same window on an operand with an extra (batch) dimension at `at`."""
        def put(values, v):
            return values[:at] + (v,) + values[at:]
        return Window(put(self.window_dimensions, 1), put(self.window_strides, 1),
                      put(self.padding, (0, 0)), put(self.base_dilation, 1),
                      put(self.window_dilation, 1))

    @property
    def symbolic(self) -> bool:
        """Whether a parameter is a symbolic size (shape-polymorphic export)."""
        return any(isinstance(v, SymbolicDimension) for v in
                   (*self.window_dimensions, *self.window_strides, *self.base_dilation,
                    *self.window_dilation, *itertools.chain(*self.padding)))

    @property
    def size(self) -> int:
        return int(np.prod(self.window_dimensions, dtype=np.int64))


def make_window(name: str, in_shape: Sequence[int], window_dimensions, window_strides,
                padding, base_dilation, window_dilation) -> Window:
    """Check and complete the user's window parameters (None means all ones; string
    padding is computed from the undilated operand and the dilated window, as in JAX)."""
    ndim = len(in_shape)
    dims = check_shapelike(name, "window_dimensions", window_dimensions, positive=True)
    ones = (1,) * len(dims)
    strides = (ones if window_strides is None else
               check_shapelike(name, "window_strides", window_strides, positive=True))
    base = (ones if base_dilation is None else
            check_shapelike(name, "base_dilation", base_dilation, positive=True))
    rhs = (ones if window_dilation is None else
           check_shapelike(name, "window_dilation", window_dilation, positive=True))
    if len(dims) != ndim:
        raise TypeError(f"{name} got the wrong number of window_dimensions for operand: got "
                        f"operand shape {tuple(in_shape)} with window_dimensions {dims}.")
    for what, values in (("window_strides", strides), ("base_dilation", base),
                         ("window_dilation", rhs)):
        if len(values) != ndim:
            raise TypeError(f"{name} got inconsistent {what} and window_dimensions: got "
                            f"{what} {values} and window_dimensions {dims}.")
    if isinstance(padding, str):
        pads = tuple(padtype_to_pads(in_shape, dilate_shape(dims, rhs), strides, padding))
    else:
        pads = normalize_padding(name, padding, ndim)
    return Window(dims, strides, pads, base, rhs)


def check_window(name: str, in_shape: Sequence[int], window: Window) -> tuple[int, ...]:
    """The output shape of `window` over `in_shape`; TypeError if they do not fit
    (primitive parameters, so already normalised)."""
    for what, values in zip(Window._fields, window):
        if len(values) != len(in_shape):
            raise TypeError(f"{name}: {what} {values} must have one entry per dimension of "
                            f"the operand's shape {tuple(in_shape)}")
    for what in ("window_dimensions", "window_strides", "base_dilation", "window_dilation"):
        if any(v < 1 for v in getattr(window, what)):
            raise TypeError(f"{name} {what} must have every element be strictly positive, "
                            f"got {getattr(window, what)}.")
    padded = [lo + dilate_dim(d, b) + hi for d, b, (lo, hi)
              in zip(in_shape, window.base_dilation, window.padding)]
    if any(p < 0 for p in padded):
        raise ValueError(f"{name}: padding {window.padding} removes more elements than the "
                         f"operand of shape {tuple(in_shape)} has")
    return window.out_shape(in_shape)


# --- transposing a windowed sum ---------------------------------------------------------------

def transpose_padding(in_shape, window: Window, out_shape) -> list[tuple[int, int]]:
    """The padding of the stride-dilated cotangent after which a window sum with
    strides `base_dilation` gives the cotangent of the input (the transpose of a
    window sum; also the lhs transpose of a convolution)."""
    pads = []
    for d, w, s, (lo, _), b, r, o in zip(in_shape, window.window_dimensions,
                                         window.window_strides, window.padding,
                                         window.base_dilation, window.window_dilation,
                                         out_shape):
        eff_w = dilate_dim(w, r)
        before = eff_w - lo - 1
        after = dilate_dim(d, b) + eff_w - 1 - dilate_dim(o, s) - before
        pads.append((before, after))
    return pads


# --- window patches ------------------------------------------------------------------------

def window_offsets(window: Window) -> list[tuple[int, ...]]:
    """Each window element's offset in the padded, dilated operand, row-major."""
    return [tuple(k * r for k, r in zip(ks, window.window_dilation))
            for ks in itertools.product(*(range(w) for w in window.window_dimensions))]


def window_patches(x, pad_value, window: Window):
    """An array of shape `out_shape + (window.size,)`: entry `[o..., k]` is element `k`
    (row-major in the window) of window `o`; padding reads `pad_value`. Linear in
    `(x, pad_value)` and built from pad, slice and concatenate, so every transform
    applies."""
    in_shape = get_aval(x).shape
    out_shape = window.out_shape(in_shape)
    dtype = get_aval(x).dtype
    if 0 in out_shape:
        return shape_ops.broadcast_in_dim(np.zeros((), dtype)[()],
                                          out_shape + (window.size,), ())
    padded = shape_ops.pad(x, pad_value, [(lo, hi, b - 1) for (lo, hi), b
                                          in zip(window.padding, window.base_dilation)])
    columns = []
    for offset in window_offsets(window):
        limits = [k + (o - 1) * s + 1 for k, o, s in zip(offset, out_shape,
                                                         window.window_strides)]
        piece = slicing.slice(padded, offset, limits, window.window_strides)
        columns.append(shape_ops.reshape(piece, out_shape + (1,)))
    return shape_ops.concatenate(columns, len(out_shape))


def padding_tensor(padding) -> ir.Value:
    """`(low, high)` pairs, some symbolic, as the `tensor<N x 2 x i32>` computed from
    the dimension variables that the dynamic windowed ops of shape-polymorphic export
    (`dynamic_conv`, `dynamic_reduce_window`) take."""
    i32 = ir.IntegerType.get_signless(32)
    return hlo.reshape(ir.RankedTensorType.get([len(padding), 2], i32),
                       mu.shape_tensor([p for pair in padding for p in pair]))


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None) -> tuple[int, ...]:
    """The shape `reduce_window` gives an operand of a shape.

    Args:
        operand_shape: the operand's shape.
        window_dimensions: the window's size per dimension.
        window_strides: the stride per dimension.
        padding: a `(low, high)` pair per dimension (`padtype_to_pads` turns
            a name into pairs).
        base_dilation: the operand's dilation.
        window_dilation: the window's dilation.

    Returns:
        The result's shape, a tuple.

    Examples:
        >>> from plax import lax
        >>> lax.reduce_window_shape_tuple((4, 6), (2, 2), (2, 2), [(0, 0), (0, 1)])
        (2, 3)
    """
    ones = (1,) * len(operand_shape)
    window = Window(tuple(window_dimensions), tuple(window_strides),
                    tuple(map(tuple, padding)), tuple(base_dilation or ones),
                    tuple(window_dilation or ones))
    return window.out_shape(operand_shape)
