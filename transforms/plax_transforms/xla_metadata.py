"""`plax.experimental.xla_metadata`: XLA frontend attributes on the ops of a region.

`with set_xla_metadata(key=value):` (or `@set_xla_metadata(key=value)`) tags the
operations staged inside, in jit and eager code alike, with
`mhlo.frontend_attributes = {key = "value"}`; nested blocks merge, the inner value of
a key winning. `set_xla_metadata(x, key=value)` tags the op producing each array in
the pytree `x` instead (a primitive, so it survives transformations).
"""
from __future__ import annotations

import functools
from typing import Any

from jaxlib.mlir import ir

from plax.extend import tree_util
from plax.extend.ad import linear_jvp
from plax.extend.batching import unary_batcher
from plax.extend.constructors import standard_primitive
from plax.extend.core import current_frontend_attributes, frontend_attributes
from plax_transforms.frontend_tags import add_frontend_attributes

__all__ = ["set_xla_metadata"]


def _attribute_text(value: Any) -> str:
    """Python booleans as XLA spells them (`true`), anything else by `str`."""
    return str(value).lower() if isinstance(value, bool) else str(value)


class _MetadataContext:
    """The `with` block (and decorator) `set_xla_metadata(**kwargs)` returns."""
    __slots__ = ("updates", "_previous")

    def __init__(self, updates: dict[str, Any]):
        self.updates = {k: _attribute_text(v) for k, v in updates.items()}
        self._previous: list = []

    def __enter__(self):
        merged = {**dict(current_frontend_attributes()), **self.updates}
        context = frontend_attributes(merged)
        context.__enter__()
        self._previous.append(context)

    def __exit__(self, *exc):
        return self._previous.pop().__exit__(*exc)

    def __call__(self, fun):
        return _WithMetadata(fun, self)


class _WithMetadata:
    """`fun` run inside the metadata block; its callable attributes too (so a jitted
    function's `.lower(...)` traces under the block)."""

    def __init__(self, fun, context: _MetadataContext):
        self._wrapped_fun = fun
        self._metadata_block = context
        functools.wraps(fun)(self)

    def __call__(self, *args, **kwargs):
        with self._metadata_block:
            return self._wrapped_fun(*args, **kwargs)

    def __getattr__(self, name):
        attribute = getattr(self._wrapped_fun, name)
        if not callable(attribute):
            return attribute

        @functools.wraps(attribute)
        def under_metadata(*args, **kwargs):
            with self._metadata_block:
                return attribute(*args, **kwargs)
        return under_metadata


def set_xla_metadata(x=None, **kwargs):
    """A block (or decorator) tagging the ops staged inside with `kwargs` as XLA
    frontend attributes; with `x`, `x` whose producing ops carry them."""
    if x is None:
        return _MetadataContext(kwargs)
    pairs = tuple(sorted(kwargs.items()))
    return tree_util.tree_map(lambda v: xla_metadata_value_p.bind(v, xla_metadata_kvs=pairs),
                              x)


def _lower_metadata_value(ctx, value, *, xla_metadata_kvs):
    owner = value.owner
    if xla_metadata_kvs and not isinstance(owner, ir.Block):  # an argument has no op
        add_frontend_attributes(owner.operation,
                                {k: _attribute_text(v) for k, v in xla_metadata_kvs})
    return value


xla_metadata_value_p = standard_primitive(
    "xla_metadata.xla_metadata_value", lambda aval, *, xla_metadata_kvs: aval,
    _lower_metadata_value, jvp=linear_jvp(),
    transpose=lambda ct, x, **params: [ct], batching=unary_batcher())
