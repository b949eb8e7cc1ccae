"""XLA frontend attributes of staged equations: the string key/value pairs that the
ops lowered from an equation carry in `mhlo.frontend_attributes`.

`plax.experimental.xla_metadata` and `plax.experimental.compute_on` set them for the
equations staged inside a `with` block; each equation records the pairs current when
it was staged (`eqn.frontend_attributes`), and re-binding an equation (inlining,
transformations) puts them back in force, so the ops of a gradient keep the tags of
the code they came from. They are part of the trace context: a function traced
under other attributes is traced again.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from jaxlib._jax import config as _jaxlib_config

Attributes = tuple[tuple[str, str], ...]
"""Sorted (key, value) pairs: hashable, so they can be part of cache keys."""

_current = _jaxlib_config.Config("plax_frontend_attributes_context", (),
                                 include_in_jit_key=True, include_in_trace_context=True)


def current_frontend_attributes() -> Attributes:
    """The attributes of the equations staged now (() outside any block)."""
    return _current.value


@contextlib.contextmanager
def frontend_attributes(attributes: dict[str, str]) -> Iterator[None]:
    """Stage the equations inside with exactly `attributes` (the caller merges them
    with `current_frontend_attributes()` as its own nesting rules say)."""
    previous = _current.swap_local(tuple(sorted(attributes.items())))
    try:
        yield
    finally:
        _current.set_local(previous)


@contextlib.contextmanager
def reapplied_frontend_attributes(attributes: Attributes) -> Iterator[None]:
    """Re-bind an equation staged with `attributes`: they win over those in force."""
    if not attributes:
        yield
        return
    with frontend_attributes({**dict(current_frontend_attributes()), **dict(attributes)}):
        yield
