"""Layouts: how an array's elements are ordered in device memory (`Layout`: the
dimensions from major to minor, and XLA's tiling), and a `Format`, a layout with a
sharding. `plax.experimental.layout` publishes them; an Array's `format` reads its
buffer's layout from jaxlib (`PjRtLayout`), as an executable's parameter and output
layouts are read.

Until a module asks XLA for a layout (`sign_layouts`), every buffer has its backend's
default one and nothing checks layouts. From then on an Array's fast-path signature
holds its layout, calls compile for committed Arrays' layouts (`nondefault_layout`),
and executables check the layouts of the buffers they are given (`executable.py`).
"""
from __future__ import annotations

import numpy as np
from jaxlib import xla_client as xc

from plax.extend.core import physical_aval
from plax.extend.sharding import Sharding
from plax_runtime import _fastpath


class _AutoLayout:
    """`Layout.AUTO`: the compiler chooses the layout."""

    def __repr__(self):
        return "AUTO"


AUTO = _AutoLayout()


class Layout:
    """A device-memory layout: `major_to_minor` (the dimensions, slowest-varying
    first), XLA's `tiling`, and the bit width of sub-byte elements (0: natural)."""
    AUTO = AUTO

    def __init__(self, major_to_minor: tuple[int, ...],
                 tiling: tuple[tuple[int, ...], ...] | None = None,
                 sub_byte_element_size_in_bits: int = 0):
        self.major_to_minor = tuple(major_to_minor)
        self.tiling = None if tiling is None else tuple(map(tuple, tiling))
        self.sub_byte_element_size_in_bits = sub_byte_element_size_in_bits

    @staticmethod
    def from_pjrt_layout(pjrt_layout: xc.PjRtLayout) -> Layout:
        xla_layout = pjrt_layout._xla_layout()
        return Layout(xla_layout.minor_to_major()[::-1], xla_layout.tiling(),
                      xla_layout.element_size_in_bits())

    def _key(self):
        return self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits

    def __repr__(self):
        return (f"Layout(major_to_minor={self.major_to_minor}, tiling={self.tiling}, "
                f"sub_byte_element_size_in_bits={self.sub_byte_element_size_in_bits})")

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, Layout) and self._key() == other._key()

    def update(self, **changes) -> Layout:
        fields = dict(major_to_minor=self.major_to_minor, tiling=self.tiling,
                      sub_byte_element_size_in_bits=self.sub_byte_element_size_in_bits)
        return Layout(**{**fields, **changes})

    def _to_xla_layout(self, dtype) -> xc.Layout:
        minor_to_major = self.major_to_minor[::-1]
        if self.tiling is None:
            return xc.Layout(minor_to_major)
        bits = self.sub_byte_element_size_in_bits
        if not bits and np.issubdtype(dtype, np.integer) and np.iinfo(dtype).bits < 8:
            bits = np.iinfo(dtype).bits
        return xc.Layout(minor_to_major, self.tiling, bits)

    def check_compatible_aval(self, aval_shape: tuple[int, ...]) -> None:
        if len(self.major_to_minor) != len(aval_shape):
            raise ValueError(
                "Length of major_to_minor and the rank of the value should match. Got "
                f"major_to_minor={self.major_to_minor} and shape={tuple(aval_shape)}")

    def mlir_layout_mode(self, dtype) -> str:
        """The layout as `mhlo.layout_mode` states it: XLA's `{minor,...,major:T(tiles)}`."""
        return str(self._to_xla_layout(dtype))


class Format:
    """A `Layout` (or `Layout.AUTO`, or None: the default) with a `Sharding`; a
    concrete layout needs a concrete sharding."""
    __slots__ = ("layout", "sharding")

    def __init__(self, layout: Layout | _AutoLayout | None = None,
                 sharding: Sharding | None = None):
        if isinstance(layout, Layout) and sharding is None:
            raise ValueError(
                f"Sharding has to be concrete when layout is of type {type(layout)}. Please "
                "pass a `jax.sharding.NamedSharding` or `jax.sharding.SingleDeviceSharding` "
                f"to the sharding argument. Got sharding {sharding}")
        if not isinstance(layout, (Layout, _AutoLayout, type(None))):
            raise TypeError(
                "Invalid value received for the layout argument. Expected values are "
                f"`None`, `Layout.AUTO` or an instance of `Layout`. Got {layout} of type "
                f"{type(layout)}")
        if not isinstance(sharding, (Sharding, type(None))):
            raise TypeError(
                "Invalid value received for the sharding argument. Expected values are "
                f"`None` or an instance of `jax.Sharding`. Got {sharding} of type "
                f"{type(sharding)}")
        self.layout = layout
        self.sharding = sharding

    def __repr__(self):
        return f"Format(layout={self.layout}, sharding={self.sharding})"

    def __hash__(self):
        return hash((self.layout, self.sharding))

    def __eq__(self, other):
        return (isinstance(other, Format) and self.layout == other.layout
                and self.sharding == other.sharding)


def layout_of(pjrt_layout_getter) -> Layout | None:
    """`Layout` of what `pjrt_layout_getter()` returns, None where the backend cannot
    say (UNIMPLEMENTED)."""
    try:
        return Layout.from_pjrt_layout(pjrt_layout_getter())
    except xc.XlaRuntimeError as err:
        if "UNIMPLEMENTED" in str(err):
            return None
        raise


def executable_layouts(getter, count: int) -> list[Layout | None]:
    """The `count` layouts of an executable's parameters or outputs that `getter()`
    lists; Nones where XLA cannot list them (token parameters, some backends)."""
    try:
        layouts = getter()
    except xc.XlaRuntimeError:
        return [None] * count
    if len(layouts) != count:
        return [None] * count
    return [Layout.from_pjrt_layout(layout) for layout in layouts]


def satisfies(actual: Layout | None, requested: Layout) -> bool:
    """Whether a buffer laid out as `actual` is in the `requested` layout (a requested
    tiling of None leaves the tiling to the backend)."""
    return (actual is not None and actual.major_to_minor == requested.major_to_minor
            and requested.tiling in (None, actual.tiling)
            and actual.sub_byte_element_size_in_bits
            == requested.sub_byte_element_size_in_bits)


def default_layout(aval, sharding: Sharding) -> Layout:
    """The layout the backend gives a buffer of one shard of `aval` under `sharding`."""
    device = sharding._device_assignment[0]
    physical = physical_aval(aval)
    return Layout.from_pjrt_layout(device.client.get_default_layout(
        np.dtype(physical.dtype), sharding.shard_shape(physical.shape), device))


def check_format(format: Format, aval, what: str) -> None:
    """Raises unless `format`'s concrete layout has one dimension per axis of `aval`."""
    if isinstance(format.layout, Layout):
        try:
            format.layout.check_compatible_aval(aval.shape)
        except ValueError as err:
            raise ValueError(f"One of {what} is incompatible with its layout annotation "
                             f"{format.layout}: {err}") from None


_signed = [False]


def sign_layouts() -> None:
    """Arrays may have other layouts than the default from now on (a module asked XLA
    for one): their fast-path signatures hold their layouts."""
    if not _signed[0]:
        _fastpath.sign_layouts()
        _signed[0] = True


def layouts_signed() -> bool:
    """Whether Arrays may have other layouts than the default (`sign_layouts`)."""
    return _signed[0]


def nondefault_layout(x) -> Layout | None:
    """The layout of the Array `x` where it is not its backend's default for `x`'s
    shards; None otherwise (always, before `sign_layouts`)."""
    format = getattr(x, "format", None) if _signed[0] else None
    layout = None if format is None else format.layout
    if layout is None or layout == default_layout(x.aval, x.sharding):
        return None
    return layout
